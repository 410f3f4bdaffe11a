import type { FastifyInstance } from 'fastify';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEngineSim, type EngineSim } from '../../engine-sim/index.js';
import type { ProcessStatsSnapshot } from '../../gateway/process-stats.js';
import type { Store } from '../../trajectory/index.js';
import { openTestSession, SHELL_TOOLS, startTestGateway, TEST_ADMIN_TOKEN, tempStore, widgetScript } from '../helpers/gateway.js';
import { testCodec, testEngineTokenizer } from '../helpers/stack.js';

/** What the TCP path in front of the engine holds back per generation, ms. */
const ENGINE_DELAY_MS = 300;

let engine: EngineSim;
let slowPath: Server;
let store: Store;
let gateway: FastifyInstance;
let url: string;

/** A pass-through HTTP proxy to the engine that holds each generation back before forwarding it. */
function delayingProxy(target: string): Promise<Server> {
  const to = new URL(target);
  const server = createServer((req, res) => {
    const forward = () => {
      const upstream = httpRequest({ host: to.hostname, port: to.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    };
    if (req.method === 'POST' && req.url === '/v1/completions') setTimeout(forward, ENGINE_DELAY_MS);
    else forward();
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

beforeAll(async () => {
  const codec = await testCodec();
  engine = await startEngineSim({ tokenizer: await testEngineTokenizer(), chatTemplate: codec.template, script: { wanderProbability: 0, tasks: [widgetScript()] }, timeScale: 0 });
  slowPath = await delayingProxy(engine.url);
  const address = slowPath.address() as { port: number };
  store = tempStore('gw-timing-');
  ({ gateway, url } = await startTestGateway(store, [{ name: 'e0', kind: 'vllm', url: `http://127.0.0.1:${address.port}` }]));
});

afterAll(async () => {
  await gateway?.close();
  await new Promise((resolve) => slowPath?.close(resolve));
  await engine?.close();
  store?.close();
});

async function turnStats(query = ''): Promise<ProcessStatsSnapshot['turnMs']> {
  const r = await fetch(`${url}/admin/v1/stats${query}`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } });
  return ((await r.json()) as ProcessStatsSnapshot).turnMs;
}

async function chat(key: string, stream: boolean): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Fix the widget please.' }], tools: SHELL_TOOLS, stream }),
  });
  await r.text();
  return { status: r.status, ms: performance.now() - started };
}

describe('gateway: the time a model request spends in the gateway, apart from the engine', () => {
  it('splits each generating request, streamed or not, into the engine share and what the gateway added', async () => {
    await turnStats('?reset=1');
    const answers = [];
    for (const [i, stream] of [false, true, false].entries()) answers.push(await chat(await openTestSession(url, `tt-${i}`), stream));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    const t = await turnStats();
    expect(t.engine.count).toBe(3);
    expect(t.added.count).toBe(3);
    // The engine's share holds the delay on its path; the gateway's own share does not.
    expect(t.engine.p50).toBeGreaterThanOrEqual(ENGINE_DELAY_MS);
    expect(t.added.max).toBeLessThan(ENGINE_DELAY_MS);
    // Its parts: reading the body, before the engine, after it; each one of the three requests, none longer than the whole.
    for (const phase of Object.values(t.phases)) {
      expect(phase.count).toBe(3);
      expect(phase.max).toBeLessThanOrEqual(t.added.max * 1.01 + 0.01);
    }
    // Preparing a first turn (template, encode) and committing it take measurable time.
    expect(t.phases.beforeEngine.p50).toBeGreaterThan(0.001);
    expect(t.phases.afterEngine.p50).toBeGreaterThan(0.001);
    // Every part lies inside the latency the client saw.
    const slowest = Math.max(...answers.map((a) => a.ms));
    expect(t.engine.max + t.added.p50).toBeLessThanOrEqual(slowest + 1);
  });

  it('does not time a request that generated nothing, and a reset starts a new window', async () => {
    await turnStats('?reset=1');
    const r = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${await openTestSession(url, 'tt-bad')}` },
      body: JSON.stringify({ messages: [{ role: 'tool', content: 'no call before this' }], max_tokens: -1 }),
    });
    expect(r.status).toBe(400);
    expect((await turnStats()).added.count).toBe(0);
  });
});
