/**
 * The gateway's `/metrics` over a real gateway and engine-sim: after real multi-turn sessions, the
 * turn and token counters equal what the store holds, the router counted each placement, and the
 * route refuses a scrape without the admin token.
 */
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEngineSim, type EngineSim } from '../../engine-sim/index.js';
import { createRouter, type Router } from '../../scheduler/router.js';
import { createMetrics } from '../../telemetry/metrics.js';
import type { Store } from '../../trajectory/index.js';
import { buildGateway } from '../../gateway/server.js';
import { openTestSession, SHELL_TOOLS, TEST_ADMIN_TOKEN, tempStore, widgetScript } from '../helpers/gateway.js';
import { testCodec, testEngineTokenizer } from '../helpers/stack.js';
import { scrape, total } from '../helpers/metrics-scrape.js';

let engine: EngineSim;
let store: Store;
let gateway: FastifyInstance;
let url: string;
let router: Router;
const sessions = ['m-0', 'm-1'];
/** Model requests that generated, streamed or not. */
let generated = 0;

type Message = Record<string, unknown>;

async function chat(key: string, messages: Message[], stream: boolean): Promise<Message> {
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ messages, tools: SHELL_TOOLS, stream }),
  });
  expect(r.status).toBe(200);
  generated += 1;
  if (!stream) return ((await r.json()) as { choices: { message: Message }[] }).choices[0]!.message;
  // The streamed answer is not needed: the next turn is sent from the stored one.
  await r.text();
  return {};
}

/** The widget task to its end: two tool calls answered, then the final reply; the second session streams its last turn. */
async function runSession(sessionId: string, streamLast: boolean): Promise<void> {
  const key = await openTestSession(url, sessionId);
  const messages: Message[] = [{ role: 'user', content: 'Fix the widget please.' }];
  for (let turn = 0; turn < 2; turn++) {
    const reply = await chat(key, messages, false);
    const calls = reply.tool_calls as { id: string }[];
    expect(calls).toHaveLength(1);
    messages.push(reply, { role: 'tool', tool_call_id: calls[0]!.id, content: turn === 0 ? 'widget.py' : 'def widget(): pass' });
  }
  await chat(key, messages, streamLast);
}

beforeAll(async () => {
  const codec = await testCodec();
  engine = await startEngineSim({ tokenizer: await testEngineTokenizer(), chatTemplate: codec.template, script: { wanderProbability: 0, tasks: [widgetScript()] }, timeScale: 0 });
  store = tempStore('gw-metrics-');
  const metrics = createMetrics(new Registry());
  const engines = [{ name: 'e0', kind: 'vllm' as const, url: engine.url }];
  // The router counts on the gateway's metrics, as stack/roles/gateway.ts wires them.
  router = createRouter(engines, { policy: 'home' }, metrics.router);
  gateway = await buildGateway({ codec, store, engines, modelName: 'Qwen/Qwen3-8B', adminToken: TEST_ADMIN_TOKEN, router, replica: { id: 'test-gateway' }, metrics });
  await gateway.listen({ host: '127.0.0.1', port: 0 });
  url = `http://127.0.0.1:${(gateway.server.address() as { port: number }).port}`;
  await runSession(sessions[0]!, false);
  await runSession(sessions[1]!, true);
});

afterAll(async () => {
  await gateway?.close();
  await engine?.close();
  store?.close();
});

describe('gateway /metrics', () => {
  it('refuses a scrape without the admin token or with another', async () => {
    expect((await scrape(url)).status).toBe(401);
    expect((await scrape(url, 'not-the-token')).status).toBe(401);
    const ok = await scrape(url, TEST_ADMIN_TOKEN);
    expect(ok.status).toBe(200);
    expect(ok.contentType).toContain('text/plain');
  });

  it('counts the turns, prompt, sampled and cached tokens the store holds', async () => {
    const turns = (await Promise.all(sessions.map((s) => store.loadTurns(s)))).flat();
    expect(turns).toHaveLength(6);
    const { samples } = await scrape(url, TEST_ADMIN_TOKEN);
    expect(total(samples, 'rollout_gateway_turns_total')).toBe(turns.length);
    expect(total(samples, 'rollout_gateway_turns_total', { finish_reason: 'tool_calls' })).toBe(turns.filter((t) => t.finishReason === 'tool_call').length);
    expect(total(samples, 'rollout_gateway_turns_total', { finish_reason: 'stop' })).toBe(turns.filter((t) => t.finishReason === 'stop').length);
    expect(total(samples, 'rollout_gateway_sampled_tokens_total')).toBe(turns.reduce((n, t) => n + t.sampled.length, 0));
    expect(total(samples, 'rollout_gateway_engine_cached_tokens_total')).toBe(turns.reduce((n, t) => n + t.cachedTokens, 0));
    // A linear chain's prompt is every earlier delta and sample, then its own delta.
    let prompts = 0;
    for (const session of sessions) {
      let context = 0;
      for (const t of await store.loadTurns(session)) {
        prompts += context + t.promptDelta.length;
        context += t.promptDelta.length + t.sampled.length;
      }
    }
    expect(total(samples, 'rollout_gateway_prompt_tokens_total')).toBe(prompts);
    expect(total(samples, 'rollout_gateway_engine_cached_tokens_total')).toBeGreaterThan(0);
  });

  it('times every generating request and counts each placement and the engine health', async () => {
    await router.registry.refresh();
    const { samples } = await scrape(url, TEST_ADMIN_TOKEN);
    expect(total(samples, 'rollout_gateway_added_latency_seconds_count')).toBe(generated);
    expect(total(samples, 'rollout_gateway_engine_latency_seconds_count')).toBe(generated);
    expect(total(samples, 'rollout_gateway_engine_latency_seconds_sum')).toBeGreaterThan(0);
    expect(total(samples, 'rollout_router_decisions_total', { instance: 'e0' })).toBe(generated);
    expect(total(samples, 'rollout_router_prompt_tokens_total')).toBe(total(samples, 'rollout_gateway_prompt_tokens_total'));
    expect(total(samples, 'rollout_router_migrations_total')).toBe(0);
    expect(total(samples, 'rollout_engine_healthy', { instance: 'e0' })).toBe(1);
    // The engine's own figures, from the router's scrape of its /metrics.
    const scraped = router.registry.metrics('e0')!;
    expect(scraped.prefixHitRate).toBeGreaterThan(0);
    expect(total(samples, 'rollout_engine_prefix_cache_hit_ratio', { instance: 'e0' })).toBe(scraped.prefixHitRate);
    expect(total(samples, 'rollout_engine_kv_cache_usage_ratio', { instance: 'e0' })).toBe(scraped.kvUsage);
    expect(total(samples, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
  });
});
