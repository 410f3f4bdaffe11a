import type { FastifyInstance } from 'fastify';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEngineSim, type EngineSim } from '../../engine-sim/index.js';
import type { EngineInstance } from '../../gateway/server.js';
import { RemoteRouter } from '../../scheduler/placement/remote-router.js';
import { blockHashes } from '../../scheduler/routing/block-hash.js';
import { startPlacementService, type PlacementService } from '../../scheduler/placement/service.js';
import { httpTransport } from '../../scheduler/placement/transport.js';
import { scrape, total } from '../helpers/metrics-scrape.js';
import { createRouter, type CallRouter, type RoutingOptions } from '../../scheduler/router.js';
import { freePort } from '../../stack/ports.js';
import { SqliteStore, type Store } from '../../trajectory/index.js';
import { peakOnEngine } from '../helpers/engine-peak.js';
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

const remote = (url = service.url) => new RemoteRouter({ transport: httpTransport(url, TOKEN), engines, routing, retryAfterMs: 60_000, log: () => undefined });

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
const peak = (urls: string[], perReplica: number, prefix: string) => peakOnEngine(sim, urls, perReplica, prefix, { content: 'Write it long', maxTokens: MAX_TOKENS, homeInstance: 'kv' });

/** What a remote router sends, seen on its way to the service: each request's path and body. */
async function relayToService(): Promise<{ url: string; sent: { path: string; body: Record<string, unknown> }[]; close(): void }> {
  const sent: { path: string; body: Record<string, unknown> }[] = [];
  const relay = http.createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString();
    if (body) sent.push({ path: request.url!, body: JSON.parse(body) as Record<string, unknown> });
    const answer = await fetch(`${service.url}${request.url}`, { method: request.method, headers: request.headers as Record<string, string>, body: body || undefined });
    response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(await answer.text());
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(relay.address() as AddressInfo).port}`, sent, close: () => relay.close() };
}

async function waiting(): Promise<number> {
  const r = await fetch(`${service.url}/v1/instances`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return ((await r.json()) as { waiting: number }).waiting;
}

describe('placement service shared by gateway replicas', () => {
  it('never admits more working sets to an engine than its KV capacity, however many replicas send calls', async () => {
    const a = await replica('P-A', remote());
    const b = await replica('P-B', remote());
    expect(await peak([a, b], 2, 'shared')).toBe(1);
    // The last calls' ends reach the service within `endDelayMs` of their answers.
    await expect
      .poll(async () => (await fetch(`${service.url}/v1/instances`, { headers: { authorization: `Bearer ${TOKEN}` } })).json())
      .toMatchObject({ waiting: 0, instances: [{ name: 'kv', healthy: true, inFlightRequests: 0 }] });
  });

  it('(without it, each replica admits on its own and the engine is over-admitted)', async () => {
    const routers = [createRouter(engines, routing), createRouter(engines, routing)];
    const urls = [await replica('L-A', routers[0]!), await replica('L-B', routers[1]!)];
    await Promise.all(routers.map((r) => r.registry.refresh()));
    expect(await peak(urls, 2, 'own')).toBe(2);
  });

  it('drops a held acquire when its caller aborts', async () => {
    const router = remote();
    const blocker = await router.acquire({ chainId: 'hold/0', promptIds: new Array(100).fill(1), expectedOutputTokens: MAX_TOKENS });
    expect(blocker?.instance).toBe('kv');
    const abort = new AbortController();
    const before = await scrape(service.url, TOKEN);
    const held = router.acquire({ chainId: 'wait/0', promptIds: new Array(100).fill(2), expectedOutputTokens: MAX_TOKENS }, abort.signal);
    await expect.poll(waiting).toBe(1);
    // The service's /metrics sees the call held, and its wait ended when it was dropped.
    expect(total((await scrape(service.url, TOKEN)).samples, 'rollout_router_held_calls')).toBe(1);
    abort.abort();
    expect(await held).toBeUndefined();
    await expect.poll(waiting).toBe(0);
    const after = (await scrape(service.url, TOKEN)).samples;
    expect(total(after, 'rollout_router_held_calls')).toBe(0);
    expect(total(after, 'rollout_router_held_calls_total') - total(before.samples, 'rollout_router_held_calls_total')).toBe(1);
    expect(total(after, 'rollout_router_held_wait_seconds_count') - total(before.samples, 'rollout_router_held_wait_seconds_count')).toBe(1);
    expect(total(after, 'rollout_engine_healthy', { instance: 'kv' })).toBe(1);
    expect((await scrape(service.url)).status).toBe(401);
    router.finished(blocker!, []);
    await expect.poll(async () => service.router.registry.views()[0]!.inFlightRequests).toBe(0);
  });

  it('sends a chain only its new blocks; a base the service lacks is refused and the caller sends them all', async () => {
    const lines: string[] = [];
    const relay = await relayToService();
    const router = new RemoteRouter({ transport: httpTransport(relay.url, TOKEN), engines, routing, retryAfterMs: 60_000, log: (line) => lines.push(line) });
    const post = (path: string, body: object) =>
      fetch(`${service.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body: JSON.stringify(body) });
    const raw = async (base: object | undefined, blocks: number[]) => {
      const r = await post('/v1/place', { chainId: 'delta/0', base, blocks, blockSize: 64, promptTokens: 64 * blocks.length, expectedOutputTokens: 1, exclude: [] });
      const answer = (await r.json()) as { placement?: { id: string }; error?: { type: string } };
      if (answer.placement) await post('/v1/failed', { id: answer.placement.id, engineDown: false });
      return { status: r.status, type: answer.error?.type };
    };
    const prompt = Array.from({ length: 300 }, (_, i) => i);
    const sampled = Array.from({ length: 100 }, (_, i) => 1_000 + i);
    const first = (await router.acquire({ chainId: 'delta/0', promptIds: prompt, expectedOutputTokens: 100 }))!;
    router.finished(first, sampled);
    await expect.poll(async () => service.router.registry.views()[0]!.inFlightRequests).toBe(0);
    // The service holds prompt + output as sent in two parts: a call naming all of it as its base is placed.
    const all = blockHashes([...prompt, ...sampled]);
    expect(all).toHaveLength(6);
    expect(await raw({ blocks: 6, hash: all[5] }, [])).toEqual({ status: 200, type: undefined });
    expect(await raw({ blocks: 6, hash: all[5]! + 1 }, [])).toEqual({ status: 409, type: 'StaleChainBaseError' });
    // The service now hears another history for the chain: the router's next call names a base it lacks, and is sent again whole.
    expect(await raw(undefined, [7])).toEqual({ status: 200, type: undefined });
    const next = await router.acquire({ chainId: 'delta/0', promptIds: [...prompt, ...sampled, ...prompt], expectedOutputTokens: 1 });
    expect(next).toMatchObject({ via: 'service', instance: 'kv' });
    router.failed(next!, false);
    const whole = blockHashes([...prompt, ...sampled, ...prompt]);
    expect(await raw({ blocks: whole.length, hash: whole.at(-1) }, [])).toEqual({ status: 200, type: undefined });
    expect(lines).toEqual([]);
    relay.close();
    // Per call: its base and the blocks it carried (the last failure's notice may still be on its way); an end went alone, in a list.
    type Blocks = { base?: { blocks: number }; blocks: number[] };
    const calls = relay.sent
      .filter((c) => c.path === '/v1/acquire' || c.path === '/v1/finished')
      .map((c) => [c.path, c.path === '/v1/finished' ? (c.body.ended as Blocks[])[0]! : (c.body as Blocks)] as const)
      .map(([path, c]) => [path, c.base?.blocks ?? 0, c.blocks.length]);
    expect(calls).toEqual([
      ['/v1/acquire', 0, 4],
      ['/v1/finished', 4, 2],
      ['/v1/acquire', 6, 4],
      ['/v1/acquire', 0, 10],
    ]);
  });

  it("sends a call's end on the next placement request, or alone after endDelayMs; an end the service lacks is said", async () => {
    const lines: string[] = [];
    const relay = await relayToService();
    const router = new RemoteRouter({ transport: httpTransport(relay.url, TOKEN), engines, routing, retryAfterMs: 60_000, endDelayMs: 60_000, log: (line) => lines.push(line) });
    const inFlight = () => service.router.registry.views()[0]!.inFlightRequests;
    const call = (chainId: string) => ({ chainId, promptIds: Array.from({ length: 200 }, (_, i) => i), expectedOutputTokens: 1 });
    const a = (await router.acquire(call('ride/a')))!;
    router.finished(a, [7]);
    // Waiting for a request to ride on (endDelayMs is a minute here): the service still counts it.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(inFlight()).toBe(1);
    const b = (await router.acquire(call('ride/b')))!;
    // The end rode on b's acquire and was applied before it: only b is in flight.
    expect(inFlight()).toBe(1);
    const acquires = relay.sent.filter((c) => c.path === '/v1/acquire');
    expect(acquires.map((c) => (c.body.ended as { id: string }[]).map((e) => e.id))).toEqual([[], [(a as { id: string }).id]]);
    router.finished(b, [8]);
    // Closing sends the end that found no request, alone.
    await router.close();
    expect(inFlight()).toBe(0);
    const alone = relay.sent.filter((c) => c.path === '/v1/finished');
    expect(alone.map((c) => (c.body.ended as { id: string }[]).map((e) => e.id))).toEqual([[(b as { id: string }).id]]);
    expect(lines).toEqual([]);
    // With the default delay an end goes alone within milliseconds; one the service no longer holds is logged, not hidden.
    const quick = new RemoteRouter({ transport: httpTransport(relay.url, TOKEN), engines, routing, retryAfterMs: 60_000, log: (line) => lines.push(line) });
    const c = (await quick.acquire(call('ride/c')))!;
    quick.finished(c, [9]);
    await expect.poll(inFlight).toBe(0);
    quick.finished(c, [9]);
    await expect.poll(() => lines).toEqual([expect.stringMatching(/did not hold 1 ended placement/)]);
    await quick.close();
    relay.close();
  });

  it('falls back to routing locally when the placement service is unreachable', async () => {
    const lines: string[] = [];
    const router = new RemoteRouter({ transport: httpTransport(`http://127.0.0.1:${await freePort()}`, TOKEN), engines, routing, log: (line) => lines.push(line) });
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
