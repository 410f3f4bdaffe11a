import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEngineSim, type EngineSim } from '../../engine-sim/index.js';
import type { EngineInstance } from '../../gateway/server.js';
import { RemoteRouter } from '../../scheduler/placement/remote-router.js';
import { startPlacementService, type PlacementService } from '../../scheduler/placement/service.js';
import { createRouter, type CallRouter, type RoutingOptions } from '../../scheduler/router.js';
import { freePort } from '../../stack/ports.js';
import { SqliteStore, type Store } from '../../trajectory/index.js';
import { openTestSession, sessionInfo, startTestGateway, tempStore } from '../helpers/gateway.js';
import { testEngineTokenizer } from '../helpers/stack.js';

const TOKEN = 'placement-token';
/** Small: one call (its prompt + max_tokens) takes more than half of it, so only one fits at a time. */
const KV = 4_000;
const MAX_TOKENS = 2_500;
const script = {
  wanderProbability: 0,
  tasks: [{ taskId: 'long', match: 'Write it long', solve: [{ thought: 'Hold.', tool: null, content: 'la '.repeat(400) }] }],
};
/** Health and metrics read once and then kept: only the calls themselves move the state. */
const routing: RoutingOptions = { healthIntervalMs: 10 * 60_000, metricsMaxAgeMs: 10 * 60_000 };

let sim: EngineSim;
let engines: EngineInstance[];
let service: PlacementService;
let storeFile: string;
const stores: Store[] = [];
const gateways: FastifyInstance[] = [];

/** A gateway replica over the shared store file with the given router. */
async function replica(id: string, router: CallRouter): Promise<string> {
  const store = SqliteStore.open(storeFile);
  stores.push(store);
  const { gateway, url } = await startTestGateway(store, engines, router, { id });
  gateways.push(gateway);
  return url;
}

const remote = (url = service.url) => new RemoteRouter({ url, token: TOKEN, engines, routing, retryAfterMs: 60_000, log: () => undefined });

beforeAll(async () => {
  const tokenizer = await testEngineTokenizer();
  // About 400 tokens at a quarter of real time: each call runs for a good fraction of a second.
  sim = await startEngineSim({ tokenizer, script, timeScale: 0.25, kvCapacityTokens: KV });
  engines = [{ name: 'kv', kind: 'vllm', url: sim.url, kvCapacityTokens: KV }];
  service = await startPlacementService({ engines, routing, token: TOKEN });
  await service.router.registry.refresh();
  const first = tempStore('placement-');
  storeFile = (first as SqliteStore).db.name;
  stores.push(first);
});

afterAll(async () => {
  for (const g of gateways) await g.close();
  await service?.close();
  await sim?.close();
  for (const s of stores) await s.close();
});

/** Runs `perReplica` concurrent long calls through each gateway; the most requests the engine held at once. */
async function peakOnEngine(urls: string[], perReplica: number, prefix: string): Promise<number> {
  let peak = 0;
  const sampler = setInterval(() => {
    const { running, waiting } = sim.stats();
    peak = Math.max(peak, running + waiting);
  }, 5);
  try {
    const calls = urls.flatMap((url, r) =>
      Array.from({ length: perReplica }, async (_, i) => {
        const sessionId = `${prefix}-${r}-${i}`;
        const key = await openTestSession(url, sessionId, sessionInfo({ homeInstance: 'kv', taskId: 'long' }));
        const response = await fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: JSON.stringify({ messages: [{ role: 'user', content: `Write it long, ${sessionId}.` }], max_tokens: MAX_TOKENS }),
        });
        expect(response.status, await response.clone().text()).toBe(200);
        await response.json();
      }),
    );
    await Promise.all(calls);
  } finally {
    clearInterval(sampler);
  }
  return peak;
}

async function waiting(): Promise<number> {
  const r = await fetch(`${service.url}/v1/instances`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return ((await r.json()) as { waiting: number }).waiting;
}

describe('placement service shared by gateway replicas', () => {
  it('never admits more working sets to an engine than its KV capacity, however many replicas send calls', async () => {
    const a = await replica('P-A', remote());
    const b = await replica('P-B', remote());
    expect(await peakOnEngine([a, b], 2, 'shared')).toBe(1);
    const state = (await (await fetch(`${service.url}/v1/instances`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as any;
    expect(state).toMatchObject({ waiting: 0, instances: [{ name: 'kv', healthy: true, inFlightRequests: 0 }] });
  });

  it('(without it, each replica admits on its own and the engine is over-admitted)', async () => {
    const routers = [createRouter(engines, routing), createRouter(engines, routing)];
    const urls = [await replica('L-A', routers[0]!), await replica('L-B', routers[1]!)];
    await Promise.all(routers.map((r) => r.registry.refresh()));
    expect(await peakOnEngine(urls, 2, 'own')).toBe(2);
  });

  it('drops a held acquire when its caller aborts', async () => {
    const router = remote();
    const blocker = await router.acquire({ chainId: 'hold/0', promptIds: new Array(100).fill(1), expectedOutputTokens: MAX_TOKENS });
    expect(blocker?.instance).toBe('kv');
    const abort = new AbortController();
    const held = router.acquire({ chainId: 'wait/0', promptIds: new Array(100).fill(2), expectedOutputTokens: MAX_TOKENS }, abort.signal);
    await expect.poll(waiting).toBe(1);
    abort.abort();
    expect(await held).toBeUndefined();
    await expect.poll(waiting).toBe(0);
    router.finished(blocker!, []);
    await expect.poll(async () => service.router.registry.views()[0]!.inFlightRequests).toBe(0);
  });

  it('falls back to routing locally when the placement service is unreachable', async () => {
    const lines: string[] = [];
    const router = new RemoteRouter({ url: `http://127.0.0.1:${await freePort()}`, token: TOKEN, engines, routing, log: (line) => lines.push(line) });
    const url = await replica('F-A', router);
    await router.acquire({ chainId: 'probe/0', promptIds: [1], expectedOutputTokens: 1 }).then((p) => p && router.failed(p, false));
    expect(lines.join('\n')).toMatch(/routing locally/);
    const key = await openTestSession(url, 'fallback', sessionInfo({ homeInstance: 'kv', taskId: 'long' }));
    const r = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Write it long, fallback.' }], max_tokens: 100 }),
    });
    expect(r.status).toBe(200);
  });
});
