import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEngineSim, type EngineSim } from '../../engine-sim/index.js';
import { ProcessStats, type ProcessStatsSnapshot } from '../../gateway/process-stats.js';
import type { Store } from '../../trajectory/index.js';
import { openTestSession, SHELL_TOOLS, startTestGateway, TEST_ADMIN_TOKEN, tempStore, widgetScript } from '../helpers/gateway.js';
import { testCodec, testEngineTokenizer } from '../helpers/stack.js';

type Stats = ProcessStatsSnapshot & { liveSessions: number; collected: boolean };

let engine: EngineSim;
let store: Store;
let gateway: FastifyInstance;
let url: string;

beforeAll(async () => {
  const codec = await testCodec();
  engine = await startEngineSim({ tokenizer: await testEngineTokenizer(), chatTemplate: codec.template, script: { wanderProbability: 0, tasks: [widgetScript()] }, timeScale: 0 });
  store = tempStore('gw-stats-');
  ({ gateway, url } = await startTestGateway(store, [{ name: 'e0', kind: 'vllm', url: engine.url }]));
});

afterAll(async () => {
  await gateway?.close();
  await engine?.close();
  store?.close();
});

async function stats(query = '', token = TEST_ADMIN_TOKEN): Promise<{ status: number; body: Stats }> {
  const r = await fetch(`${url}/admin/v1/stats${query}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: r.status, body: (await r.json()) as Stats };
}

/** Holds this process's event loop (the gateway's: it runs in the test process) for `ms`. */
function block(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('gateway: GET /admin/v1/stats', () => {
  it('counts live sessions and reports memory', async () => {
    for (const id of ['st-1', 'st-2']) {
      const key = await openTestSession(url, id);
      const r = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'Fix the widget please.' }], tools: SHELL_TOOLS }),
      });
      expect(r.status).toBe(200);
    }
    const { status, body } = await stats('?gc=1');
    expect(status).toBe(200);
    expect(body.liveSessions).toBe(2);
    expect(body.collected).toBe(typeof (globalThis as { gc?: unknown }).gc === 'function');
    expect(body.memory.heapUsed).toBeGreaterThan(0);
    expect(body.memory.rss).toBeGreaterThanOrEqual(body.memory.heapUsed);
    expect(body.memory.arrayBuffers).toBeGreaterThanOrEqual(0);
    expect(body.cpuMs.user).toBeGreaterThan(0);
  });

  it('shows a blocked event loop in the delay window, and a reset starts a new one', async () => {
    await stats('?reset=1');
    await new Promise((resolve) => setTimeout(resolve, 20));
    block(250);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const blocked = (await stats('?reset=1')).body;
    expect(blocked.eventLoopDelayMs.samples).toBeGreaterThan(0);
    expect(blocked.eventLoopDelayMs.max).toBeGreaterThanOrEqual(200);
    expect(blocked.eventLoopDelayMs.p50).toBeLessThanOrEqual(blocked.eventLoopDelayMs.max);
    const after = (await stats()).body;
    expect(after.eventLoopDelayMs.max).toBeLessThan(blocked.eventLoopDelayMs.max);
  });

  it('samples the delay only from the first read on: an unread gateway keeps no 1 ms timer', async () => {
    const unread = new ProcessStats();
    try {
      await new Promise((resolve) => setTimeout(resolve, 50));
      // No samples while nobody read: the window starts with the first read.
      const first = unread.snapshot();
      expect(first.eventLoopDelayMs.samples).toBe(0);
      expect(first.windowMs).toBeLessThan(5);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(unread.snapshot().eventLoopDelayMs.samples).toBeGreaterThan(5);
    } finally {
      unread.close();
    }
  });

  it('needs the admin token and a valid query', async () => {
    expect((await stats('', 'wrong')).status).toBe(401);
    expect((await stats('?reset=yes')).status).toBe(400);
  });
});
