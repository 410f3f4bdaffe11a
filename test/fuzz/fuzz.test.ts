import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchManifest } from '../../activities/types.js';
import { startStack, type Stack } from '../../stack/stack.js';
import { startTestEngines, testConfig, type TestEngines } from '../helpers/stack.js';
import { Prng } from './prng.js';
import { generateRequest, type FuzzRequest, type FuzzTargets } from './requests.js';
import { describeRequest, send, type FuzzOutcome } from './send.js';
import { SAMPLING_DEFAULTS } from '../../gateway/sampling-schema.js';

/**
 * Thousands of malformed requests against every route of the gateway and the batch API, on
 * loopback, while a real batch runs on the same stack. Bounded by count and by time; seeded, so a
 * failure reproduces with `FUZZ_SEED=<seed> npx vitest run test/fuzz`.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 11);
const MAX_REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 4_000);
const MAX_FUZZ_MS = 30_000;
const IN_FLIGHT = 16;
const REQUEST_TIMEOUT_MS = 15_000;
/** Both servers' body limit here: small, so that the too-large path is cheap to hit. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;
const ADMIN_TOKEN = 'fuzz-admin';
const API_TOKEN = 'fuzz';

/**
 * A forced full GC. Vitest's forks run without `--expose-gc`; the flag set at run time makes
 * `gc` available to a new context, which collects the whole heap.
 */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

function heapUsed(): number {
  collectGarbage();
  return process.memoryUsage().heapUsed;
}

let engines: TestEngines;
let stack: Stack;
const batchId = `fuzz-${Date.now()}`;
const outcomes: { index: number; request: FuzzRequest; outcome: FuzzOutcome; ms: number }[] = [];
let fuzzMs = 0;
let heapBefore = 0;
let heapAfter = 0;
let manifest: BatchManifest;

async function api(method: 'GET' | 'POST', route: string, body?: unknown): Promise<{ status: number; json: any }> {
  const r = await fetch(`${stack.apiUrl}${route}`, {
    method,
    headers: { authorization: `Bearer ${API_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: r.status, json: await r.json() };
}

async function admin(route: string, body: unknown): Promise<any> {
  const r = await fetch(`${stack.gatewayUrl}${route}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(r.status, route).toBe(200);
  return r.json();
}

async function waitForManifest(): Promise<BatchManifest> {
  for (;;) {
    const { json } = await api('GET', `/v1/batches/${batchId}`);
    if (json.manifest) return json.manifest as BatchManifest;
    if (json.status !== 'running') throw new Error(`batch ${batchId} is ${json.status}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** Generates and sends requests, `IN_FLIGHT` at a time, until the count or the time is used up. */
async function fuzz(targets: FuzzTargets): Promise<void> {
  const rng = new Prng(SEED);
  const started = performance.now();
  let next = 0;
  const lane = async () => {
    while (next < MAX_REQUESTS && performance.now() - started < MAX_FUZZ_MS) {
      const index = next++;
      // Generated in index order from one PRNG: request i is the same whatever the timing.
      const request = generateRequest(rng, targets);
      const sent = performance.now();
      const outcome = await send({ gateway: stack.gatewayUrl, api: stack.apiUrl }, request, REQUEST_TIMEOUT_MS);
      outcomes.push({ index, request, outcome, ms: performance.now() - sent });
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  fuzzMs = performance.now() - started;
}

beforeAll(async () => {
  engines = await startTestEngines({ count: 2, wanderProbability: 0.4 });
  const config = testConfig({
    engines: engines.instances,
    gateway: { port: 0, adminToken: ADMIN_TOKEN, maxBodyBytes: MAX_BODY_BYTES },
    api: { port: 0, token: API_TOKEN, maxBodyBytes: MAX_BODY_BYTES },
    batch: { concurrency: 6 },
  });
  const phase = (name: string) => console.log(`fuzz: ${name} at ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const t0 = performance.now();
  stack = await startStack(config);
  phase('stack up');
  const started = await api('POST', '/v1/batches', { batch_id: batchId, tasks: 'builtin', n: 2 });
  expect(started.status).toBe(202);
  // The fuzz's own session: a context budget of one token, so a valid request is lowered and
  // encoded in full, then answered with the budget message, never sent to an engine.
  const { key } = await admin('/admin/v1/sessions', {
    sessionId: 'fuzz-session',
    episodeId: 'fuzz-session',
    attempt: 0,
    info: { batchId: 'fuzz', taskId: 'fuzz', groupId: 'fuzz', episodeIndex: 0, agentName: 'fuzz', homeInstance: 'sim-0', budgets: { maxTurns: 1_000_000, maxContextTokens: 1, maxWallTimeMs: 600_000 }, sampling: { ...SAMPLING_DEFAULTS, maxTokens: 16 } },
  });
  heapBefore = heapUsed();
  await fuzz({ sessionKey: key as string, adminToken: ADMIN_TOKEN, apiToken: API_TOKEN, batchId, maxBodyBytes: MAX_BODY_BYTES });
  await admin('/admin/v1/sessions/fuzz-session/close', { reason: 'fuzz done' });
  heapAfter = heapUsed();
  phase('fuzz done');
  manifest = await waitForManifest();
  phase('batch done');
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  await engines?.close();
});

function histogram(key: (o: (typeof outcomes)[number]) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const o of outcomes) counts[key(o)] = (counts[key(o)] ?? 0) + 1;
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)));
}

describe(`fuzz (seed ${SEED}) beside a running batch`, () => {
  it('sent thousands of requests within its bounds', () => {
    console.log(
      `fuzz: ${outcomes.length} requests in ${(fuzzMs / 1000).toFixed(1)} s, seed ${SEED}\n` +
        `statuses ${JSON.stringify(histogram((o) => String(o.outcome.status)))}\n` +
        `kinds ${JSON.stringify(histogram((o) => o.request.kind))}\n` +
        `slowest ${[...outcomes]
          .sort((a, b) => b.ms - a.ms)
          .slice(0, 3)
          .map((o) => `#${o.index} ${o.request.kind} ${o.outcome.status} ${o.ms.toFixed(0)} ms`)
          .join(', ')}\n` +
        `heap used ${(heapBefore / 2 ** 20).toFixed(0)} MiB before, ${(heapAfter / 2 ** 20).toFixed(0)} MiB after (forced GC)`,
    );
    // The time bound ends it first on a loaded machine; a thousand requests is the least that counts.
    expect(outcomes.length).toBeGreaterThanOrEqual(Math.min(MAX_REQUESTS, 1_000));
  });

  it('answered none with a 5xx', () => {
    const failed = outcomes.filter((o) => o.outcome.status >= 500).sort((a, b) => a.index - b.index);
    const report = failed.slice(0, 5).map((o) => `#${o.index} ${o.outcome.status} ${o.outcome.answer}\n${describeRequest(o.request)}`);
    expect(report.join('\n\n'), `${failed.length} answers ≥ 500`).toBe('');
  });

  it('answered every request it could read (only malformed HTTP may go unanswered)', () => {
    const unanswered = outcomes.filter((o) => o.outcome.status === 0 && !o.request.raw).sort((a, b) => a.index - b.index);
    const report = unanswered.slice(0, 5).map((o) => `#${o.index} ${o.outcome.error}\n${describeRequest(o.request)}`);
    expect(report.join('\n\n'), `${unanswered.length} requests without an answer`).toBe('');
  });

  it('is still up: the gateway health and the API description answer', async () => {
    expect((await fetch(`${stack.gatewayUrl}/health`)).status).toBe(200);
    expect((await fetch(`${stack.apiUrl}/openapi.json`)).status).toBe(200);
  });

  it('left the batch unaffected: every episode ended ok', () => {
    expect(manifest.status).toBe('complete');
    expect(manifest.groups).toHaveLength(8);
    for (const group of manifest.groups) expect(group.n_ok, group.group_id).toBe(2);
    expect(manifest.stats.episodes).toBe(16);
  });

  it('gave its memory back: heap after a forced GC within 1.5× of before + 64 MiB', () => {
    expect(heapAfter).toBeLessThan(heapBefore * 1.5 + 64 * 2 ** 20);
  });
});
