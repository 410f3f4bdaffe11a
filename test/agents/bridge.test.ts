import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bridgedBaseUrl,
  bridgedCommand,
  bubblewrapTmpHostDir,
  startGatewayBridge,
  type GatewayBridge,
} from '../../sandbox/bridge.js';
import { agentSidecarMounts } from '../../agents/presets/sidecar.js';
import { createSandboxProvider, type SandboxProvider } from '../../sandbox/index.js';
import { freePort } from '../../stack/ports.js';

let server: http.Server;
let serverUrl: string;
let sandbox: SandboxProvider;
let sandboxId: string;
let bridge: GatewayBridge;

beforeAll(async () => {
  // A streamed answer in three parts, so buffering in the bridge would show.
  server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      res.write(`${req.method} ${req.url} ${body}|`);
      setTimeout(() => res.write('two|'), 20);
      setTimeout(() => res.end('three'), 40);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  serverUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'br-'));
  const rootDir = path.join(dir, 'sb');
  sandbox = createSandboxProvider({ provider: 'bubblewrap', rootDir });
  const workspace = mkdtempSync(path.join(dir, 'ws-'));
  sandboxId = (
    await sandbox.create({
      idempotencyKey: 'bridge-test',
      workspaceDir: workspace,
      // The forwarder and the sidecar's Node runtime it runs on.
      readOnlyMounts: agentSidecarMounts(),
    })
  ).id;
  bridge = await startGatewayBridge({
    sandboxTmpHostDir: bubblewrapTmpHostDir(rootDir)(sandboxId),
    gatewayUrls: [serverUrl],
    sessionId: 's',
  });
});

afterAll(async () => {
  await bridge?.close();
  await sandbox?.destroy(sandboxId);
  await sandbox?.release?.();
  server?.close();
});

const fetchScript = (url: string) =>
  `fetch(${JSON.stringify(url)}, { method: 'POST', body: 'hello' }).then((r) => r.text()).then((t) => console.log(t), (e) => { console.log('unreachable: ' + e.cause?.code); process.exit(3); })`;

describe('the gateway bridge', () => {
  it('gives the sandboxed command the gateway at 127.0.0.1, streamed both ways', async () => {
    const r = await sandbox.exec(
      sandboxId,
      bridgedCommand(['node', '-e', fetchScript(`${bridgedBaseUrl()}/v1/x?y=1`)], bridge),
    );
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('POST /v1/x?y=1 hello|two|three');
    expect(r.exitCode).toBe(0);
  });

  it('passes the command exit status through and leaves the rest of the network unreachable', async () => {
    const r = await sandbox.exec(
      sandboxId,
      bridgedCommand(['node', '-e', fetchScript(serverUrl)], bridge),
    );
    expect(r.stdout.trim()).toBe('unreachable: ECONNREFUSED');
    expect(r.exitCode).toBe(3);
  });

  it('removes its socket when closed', async () => {
    const other = await startGatewayBridge({
      sandboxTmpHostDir: mkdtempSync(path.join(os.tmpdir(), 'br-')),
      gatewayUrls: [serverUrl],
    sessionId: 's',
    });
    await other.close();
    await other.close();
    await expect(
      import('node:fs/promises').then((fs) => fs.stat(other.hostSocketPath)),
    ).rejects.toThrow(/ENOENT/);
  });

  describe('while the gateway restarts', () => {
    /** POSTs through the bridge's host socket, as the forwarder would; rejects when the bridge drops the connection. */
    const viaSocket = (socketPath: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const req = http.request({ socketPath, method: 'POST', path: '/v1/y' }, (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve(text));
        });
        req.on('error', reject);
        req.end('again');
      });
    const bridgeTo = async (port: number, outageMs: number) =>
      startGatewayBridge({ sandboxTmpHostDir: mkdtempSync(path.join(os.tmpdir(), 'br-')), gatewayUrls: [`http://127.0.0.1:${port}`], sessionId: 's', outageMs });

    it('holds an agent connection until the gateway listens again', async () => {
      const port = await freePort();
      const restarting = await bridgeTo(port, 10_000);
      const answer = viaSocket(restarting.hostSocketPath);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const late = http.createServer((req, res) => req.resume().on('end', () => res.end(`late ${req.url}`)));
      await new Promise<void>((resolve) => late.listen(port, '127.0.0.1', resolve));
      try {
        expect(await answer).toBe('late /v1/y');
      } finally {
        await restarting.close();
        late.close();
      }
    });

    it('drops it once the gateway has been gone for longer than the bound', async () => {
      const gone = await bridgeTo(await freePort(), 300);
      const started = Date.now();
      await expect(viaSocket(gone.hostSocketPath)).rejects.toThrow();
      expect(Date.now() - started).toBeGreaterThanOrEqual(250);
      await gone.close();
    });
  });
});
