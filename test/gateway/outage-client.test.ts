import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { GatewayOutageError, readWhole, throughOutage } from '../../gateway/client/outage.js';
import { freePort } from '../../stack/ports.js';

const listen = (server: http.Server, port: number) => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));

describe('a gateway call through an outage', () => {
  it('is repeated through refused connections and 503s until the gateway answers', async () => {
    const port = await freePort();
    let calls = 0;
    // Starting: the first answers are a restarting replica's 503.
    const server = http.createServer((_req, res) => res.writeHead(++calls < 3 ? 503 : 200).end(`call ${calls}`));
    setTimeout(() => void listen(server, port), 600);
    try {
      const r = await throughOutage(() => readWhole(fetch(`http://127.0.0.1:${port}/`)), { outageMs: 10_000 });
      expect(r).toMatchObject({ status: 200, text: 'call 3' });
    } finally {
      server.close();
    }
  });

  it('returns other error answers as they are', async () => {
    const port = await freePort();
    const server = http.createServer((_req, res) => res.writeHead(400).end('bad'));
    await listen(server, port);
    try {
      expect(await throughOutage(() => readWhole(fetch(`http://127.0.0.1:${port}/`)))).toMatchObject({ status: 400, ok: false, text: 'bad' });
    } finally {
      server.close();
    }
  });

  it('gives up once the gateway has been gone for longer than the bound', async () => {
    const port = await freePort();
    const started = Date.now();
    await expect(throughOutage(() => readWhole(fetch(`http://127.0.0.1:${port}/`)), { outageMs: 400 })).rejects.toBeInstanceOf(GatewayOutageError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
  });

  it('stops waiting when aborted', async () => {
    const port = await freePort();
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('cancelled')), 300);
    await expect(throughOutage(() => readWhole(fetch(`http://127.0.0.1:${port}/`)), { signal: controller.signal })).rejects.toThrow('cancelled');
  });
});
