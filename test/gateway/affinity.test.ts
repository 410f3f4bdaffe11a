import type { FastifyInstance } from 'fastify';
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayAdminClient } from '../../activities/gateway-admin.js';
import { startEngineSim, type EngineSim } from '../../engine-sim/index.js';
import { fetchForSession, rendezvousOrder } from '../../gateway/client/rendezvous.js';
import { startGatewayBridge } from '../../sandbox/bridge.js';
import { freePort } from '../../stack/ports.js';
import type { Store } from '../../trajectory/index.js';
import { startTestGateway, tempStore, TEST_ADMIN_TOKEN } from '../helpers/gateway.js';
import { testEngineTokenizer } from '../helpers/stack.js';

let engine: EngineSim;
let store: Store;
let gateway: FastifyInstance;
let live: string;
/** A replica URL nothing listens on: connections to it are refused. */
let dead: string;

beforeAll(async () => {
  const tokenizer = await testEngineTokenizer();
  engine = await startEngineSim({ tokenizer, script: { wanderProbability: 0, tasks: [] }, timeScale: 0 });
  store = tempStore('gw-affinity-');
  ({ gateway, url: live } = await startTestGateway(store, [{ name: 'e0', kind: 'vllm', url: engine.url }]));
  dead = `http://127.0.0.1:${await freePort()}`;
});

afterAll(async () => {
  await gateway?.close();
  await engine?.close();
  await store?.close();
});

/** A session id whose rendezvous order puts `first` first among `urls`. */
function sessionFirstOn(urls: string[], first: string): string {
  for (let i = 0; ; i++) if (rendezvousOrder(urls, `s-${i}`)[0] === first) return `s-${i}`;
}

describe('client-side session affinity', () => {
  it('orders replicas by rendezvous hash: stable, balanced, and only a removed replica’s sessions move', () => {
    const urls = ['http://g0:8300', 'http://g1:8300', 'http://g2:8300'];
    const keys = Array.from({ length: 600 }, (_, i) => `episode-${i}:0`);
    const home = new Map(keys.map((k) => [k, rendezvousOrder(urls, k)[0]!]));
    expect(keys.every((k) => rendezvousOrder([...urls].reverse(), k)[0] === home.get(k))).toBe(true);
    for (const url of urls) expect([...home.values()].filter((u) => u === url).length).toBeGreaterThan(150);
    const without = urls.slice(1);
    for (const k of keys) {
      const next = rendezvousOrder(without, k)[0];
      if (home.get(k) !== urls[0]) expect(next).toBe(home.get(k));
      else expect(next).toBe(rendezvousOrder(urls, k)[1]);
    }
  });

  it('falls back to the next replica when the session’s replica refuses the connection', async () => {
    const urls = [dead, live];
    const r = await fetchForSession(urls, sessionFirstOn(urls, dead), '/health', {});
    expect(await r.json()).toMatchObject({ status: 'ok' });
    expect(await new GatewayAdminClient({ urls, adminToken: TEST_ADMIN_TOKEN }).policy()).toMatchObject({ paused: false });
  });

  it('bridges a sandbox to the session’s replica, or the next one when it refuses', async () => {
    const urls = [dead, live];
    const bridge = await startGatewayBridge({
      sandboxTmpHostDir: mkdtempSync(path.join(os.tmpdir(), 'br-aff-')),
      gatewayUrls: urls,
      sessionId: sessionFirstOn(urls, dead),
    });
    try {
      const body = await new Promise<string>((resolve, reject) => {
        http
          .get({ socketPath: bridge.hostSocketPath, path: '/v1/models' }, (response) => {
            let text = '';
            response.setEncoding('utf8');
            response.on('data', (chunk: string) => (text += chunk));
            response.on('end', () => resolve(text));
          })
          .on('error', reject);
      });
      expect(JSON.parse(body)).toMatchObject({ object: 'list' });
    } finally {
      await bridge.close();
    }
  });
});
