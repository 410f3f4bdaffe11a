import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEngineSim, type EngineSim } from '../../engine-sim/index.js';
import type { Store } from '../../trajectory/index.js';
import { closeTestSession, openTestSession, sessionInfo, SHELL_TOOLS, startTestGateway, tempStore, widgetScript } from '../helpers/gateway.js';
import { readSseData } from '../../gateway/backends/sse.js';
import { testCodec, testEngineTokenizer } from '../helpers/stack.js';

const tools = SHELL_TOOLS;
const script = { wanderProbability: 0, tasks: [widgetScript()] };

let engine: EngineSim;
/** Slow enough (20x real time) that a client can leave mid-generation. */
let slowEngine: EngineSim;
let store: Store;
let gateway: FastifyInstance;
let url: string;

async function startGateway(): Promise<void> {
  ({ gateway, url } = await startTestGateway(store, [
    { name: 'e0', kind: 'vllm', url: engine.url },
    { name: 'slow', kind: 'vllm', url: slowEngine.url },
  ]));
}

const openSession = (sessionId: string, maxTurns?: number, homeInstance?: string) =>
  openTestSession(url, sessionId, sessionInfo({ maxTurns, homeInstance }));

async function chat(key: string, body: object, prefix = ''): Promise<{ status: number; json: any }> {
  const r = await fetch(`${url}${prefix}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
  return { status: r.status, json: await r.json() };
}

const first = [
  { role: 'system', content: 'You are an agent.' },
  { role: 'user', content: 'Fix the widget please.' },
];

beforeAll(async () => {
  engine = await startEngineSim({ tokenizer: await testEngineTokenizer(), script, timeScale: 0 });
  slowEngine = await startEngineSim({ tokenizer: await testEngineTokenizer(), script, timeScale: 20 });
  store = tempStore('gw-');
  await startGateway();
});

afterAll(async () => {
  await gateway?.close();
  await engine?.close();
  await slowEngine?.close();
  store?.close();
});

describe('gateway: OpenAI Chat Completions with token-in-token-out chains', () => {
  it('answers with parsed tool calls and exact usage, and stores what the engine sampled', async () => {
    const key = await openSession('s-basic');
    const r = await chat(key, { model: 'x', messages: first, tools });
    expect(r.status).toBe(200);
    const choice = r.json.choices[0];
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.reasoning_content).toBe('List the files first.');
    expect(choice.message.tool_calls[0].function).toEqual({ name: 'shell', arguments: '{"command":"ls"}' });
    const turns = (await store.loadTurns('s-basic'));
    expect(turns).toHaveLength(1);
    expect(r.json.usage.prompt_tokens).toBe(turns[0]!.promptDelta.length);
    expect(r.json.usage.completion_tokens).toBe(turns[0]!.sampled.length);
    const codec = await testCodec();
    expect(turns[0]!.sampled.at(-1)).toBe(codec.encoder.endOfTurnId);
    expect(turns[0]!.logprobs).toHaveLength(turns[0]!.sampled.length);
    expect(turns[0]!.logprobs.every((p) => p <= 0)).toBe(true);
  });

  it('continues the chain by appending only the new messages, and rolls back a retried turn', async () => {
    const key = await openSession('s-chain');
    const t1 = await chat(key, { messages: first, tools });
    const assistant1 = t1.json.choices[0].message;
    const second = [...first, assistant1, { role: 'tool', tool_call_id: assistant1.tool_calls[0].id, content: 'widget.py' }];
    const t2 = await chat(key, { messages: second, tools });
    expect(t2.json.choices[0].message.tool_calls[0].function.arguments).toBe('{"command":"cat widget.py"}');
    // The client echoes history differently (no reasoning, content as parts): still the same chain.
    const echoed = [{ role: 'system', content: [{ type: 'text', text: 'You are an agent.' }] }, ...second.slice(1).map((m) => ({ ...m, reasoning_content: undefined }))];
    const retry = await chat(key, { messages: echoed, tools });
    expect(retry.status).toBe(200);
    const turns = (await store.loadTurns('s-chain'));
    expect(turns.map((t) => [t.chainIndex, t.rolledBack])).toEqual([[0, false], [0, true], [0, false]]);
    const [a, , c] = turns;
    // Turn 2's prompt is turn 1's tokens plus the encoded tool result.
    expect(c!.promptDelta.length).toBeGreaterThan(0);
    const codec = await testCodec();
    expect(codec.tokenizer.decode(c!.promptDelta)).toBe('\n<|im_start|>user\n<tool_response>\nwidget.py\n</tool_response><|im_end|>\n<|im_start|>assistant\n');
    expect(retry.json.usage.prompt_tokens).toBe(a!.promptDelta.length + a!.sampled.length + c!.promptDelta.length);
    expect(await closeTestSession(url, 's-chain')).toMatchObject({ turns: 2, rollbacks: 1, rolledBackTokens: turns[1]!.sampled.length });
  });

  it('continues the newest of identical sibling chains', async () => {
    const key = await openSession('s-siblings');
    const answers = [];
    // The same first call three times (samples or retries): a chain each.
    for (let i = 0; i < 3; i++) answers.push((await chat(key, { messages: first, tools })).json.choices[0].message);
    expect(new Set(answers.map((a) => JSON.stringify(a.tool_calls.map((c: any) => c.function))))).toHaveProperty('size', 1);
    const a1 = answers[2];
    await chat(key, { messages: [...first, a1, { role: 'tool', tool_call_id: a1.tool_calls[0].id, content: 'widget.py' }], tools });
    const turns = await store.loadTurns('s-siblings');
    expect(turns.map((t) => [t.chainIndex, t.rolledBack])).toEqual([[0, false], [1, false], [2, false], [2, false]]);
  });

  it('starts a new chain, rendered with the new text, when only a tool description changes', async () => {
    const key = await openSession('s-tool-text');
    const described = (description: string) => [{ ...tools[0]!, function: { ...tools[0]!.function, description } }];
    const a1 = (await chat(key, { messages: first, tools: described('Run a command.') })).json.choices[0].message;
    const next = [...first, a1, { role: 'tool', tool_call_id: a1.tool_calls[0].id, content: 'widget.py' }];
    expect((await chat(key, { messages: next, tools: described('Run a shell command in the repository.') })).status).toBe(200);
    const turns = await store.loadTurns('s-tool-text');
    expect(turns.map((t) => [t.chainIndex, t.rolledBack])).toEqual([[0, false], [1, false]]);
    const codec = await testCodec();
    expect(codec.tokenizer.decode(turns[0]!.promptDelta)).toContain('"description": "Run a command."');
    expect(codec.tokenizer.decode(turns[1]!.promptDelta)).toContain('"description": "Run a shell command in the repository."');
  });

  it('starts a new chain for a different conversation in the same session', async () => {
    const key = await openSession('s-chains');
    await chat(key, { messages: first, tools });
    await chat(key, { messages: [{ role: 'user', content: 'Write a title for this conversation.' }] });
    expect(new Set((await store.loadTurns('s-chains')).map((t) => t.chainIndex))).toEqual(new Set([0, 1]));
  });

  it('streams reasoning, content and tool calls, then usage and [DONE]', async () => {
    const key = await openSession('s-stream');
    const r = await fetch(`${url}/s/${key}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: first, tools, stream: true, stream_options: { include_usage: true } }),
    });
    expect(r.headers.get('content-type')).toContain('text/event-stream');
    const events: string[] = [];
    for await (const data of readSseData(r.body!)) events.push(data);
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    const reasoning = chunks.map((c) => c.choices[0]?.delta?.reasoning_content ?? '').join('');
    expect(reasoning.trim()).toBe('List the files first.');
    const call = chunks.find((c) => c.choices[0]?.delta?.tool_calls)!.choices[0].delta.tool_calls[0];
    expect(call.function).toEqual({ name: 'shell', arguments: '{"command":"ls"}' });
    expect(chunks.find((c) => c.choices[0]?.finish_reason)!.choices[0].finish_reason).toBe('tool_calls');
    const usage = chunks.at(-1).usage;
    expect(usage.prompt_tokens + usage.completion_tokens).toBe(usage.total_tokens);
    expect((await store.loadTurns('s-stream'))[0]!.sampled).toHaveLength(usage.completion_tokens);
  });

  it('keeps committed turns across a gateway restart', async () => {
    const key = await openSession('s-restart');
    const t1 = await chat(key, { messages: first, tools });
    await gateway.close();
    await startGateway();
    const a1 = t1.json.choices[0].message;
    const t2 = await chat(key, { messages: [...first, a1, { role: 'tool', content: 'widget.py' }], tools });
    expect(t2.status).toBe(200);
    const turns = (await store.loadTurns('s-restart'));
    expect(turns.map((t) => t.chainIndex)).toEqual([0, 0]);
    expect(t2.json.usage.prompt_tokens).toBe(turns[0]!.promptDelta.length + turns[0]!.sampled.length + turns[1]!.promptDelta.length);
  });

  it('answers past the turn budget with a final message and records why', async () => {
    const key = await openSession('s-budget', 1);
    const t1 = await chat(key, { messages: first, tools });
    const a1 = t1.json.choices[0].message;
    const t2 = await chat(key, { messages: [...first, a1, { role: 'tool', content: 'x' }], tools });
    expect(t2.json.choices[0]).toMatchObject({ finish_reason: 'length', message: { role: 'assistant' } });
    expect(t2.json.choices[0].message.tool_calls).toBeUndefined();
    expect(await closeTestSession(url, 's-budget')).toMatchObject({ turns: 1, terminationReason: 'max_turns' });
    expect((await chat(key, { messages: first })).status).toBe(401);
  });

  it('serves a title request and the main call of one session at once, on separate chains', async () => {
    const key = await openSession('s-concurrent');
    const [main, title] = await Promise.all([
      chat(key, { messages: first, tools }),
      chat(key, { messages: [{ role: 'user', content: 'Write a five-word title for: Fix the widget.' }] }),
    ]);
    expect(main.status).toBe(200);
    expect(title.status).toBe(200);
    const turns = (await store.loadTurns('s-concurrent'));
    expect(turns.map((t) => t.chainIndex).sort()).toEqual([0, 1]);
    expect(turns.every((t) => !t.rolledBack)).toBe(true);
  });

  it('leaves the chain as it was when the client disconnects mid-generation', async () => {
    const key = await openSession('s-abort', 10, 'slow');
    const controller = new AbortController();
    const r = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ messages: first, tools, stream: true }),
      signal: controller.signal,
    });
    const reader = r.body!.getReader();
    await reader.read();
    await expect.poll(() => slowEngine.stats().running).toBe(1);
    controller.abort();
    await reader.read().catch(() => undefined);
    await expect.poll(() => slowEngine.stats().running).toBe(0);
    expect(slowEngine.stats().requestsAborted).toBe(1);
    // The next call starts the chain afresh: nothing of the aborted generation was committed.
    const next = await chat(key, { messages: first, tools });
    expect(next.status).toBe(200);
    const turns = (await store.loadTurns('s-abort'));
    expect(turns).toHaveLength(1);
    expect(next.json.usage.prompt_tokens).toBe(turns[0]!.promptDelta.length);
  });

  it('reports, per chain, where the template would render the history differently', async () => {
    const closeSession = (id: string) => closeTestSession(url, id);
    // Tool turns only: the template renders exactly what the engine saw.
    const plain = await openSession('s-nodrift');
    const p1 = (await chat(plain, { messages: first, tools })).json.choices[0].message;
    await chat(plain, { messages: [...first, p1, { role: 'tool', content: 'widget.py' }], tools });
    await closeSession('s-nodrift');
    expect((await store.loadChainReports('s-nodrift'))).toEqual([{ chainIndex: 0, driftOffset: -1, driftTurns: 0 }]);
    // A new user turn after reasoning: Qwen3's template drops the earlier <think>, the chain keeps it.
    const key = await openSession('s-drift');
    const a1 = (await chat(key, { messages: first, tools })).json.choices[0].message;
    const history = [...first, a1, { role: 'tool', content: 'widget.py' }];
    const a2 = (await chat(key, { messages: history, tools })).json.choices[0].message;
    await chat(key, { messages: [...history, a2, { role: 'user', content: 'Also check the tests.' }], tools });
    await closeSession('s-drift');
    const [report] = (await store.loadChainReports('s-drift'));
    expect(report!.driftOffset).toBeGreaterThan(0);
    expect(report!.driftTurns).toBeGreaterThanOrEqual(1);
    const turns = (await store.loadTurns('s-drift'));
    expect(report!.driftOffset).toBeLessThan(turns[0]!.promptDelta.length + turns[0]!.sampled.length);
  });

  it('rejects bad requests in the OpenAI error envelope', async () => {
    const key = await openSession('s-errors');
    expect(await chat('sk-unknown', { messages: first })).toMatchObject({ status: 401, json: { error: { type: 'authentication_error' } } });
    expect(await chat(key, { messages: [] })).toMatchObject({ status: 400, json: { error: { type: 'invalid_request_error' } } });
    expect((await chat(key, { messages: first, n: 2 })).status).toBe(400);
    const badArgs = [...first, { role: 'assistant', content: '', tool_calls: [{ id: 'c', type: 'function', function: { name: 'shell', arguments: '{oops' } }] }];
    expect((await chat(key, { messages: badArgs })).json.error.message).toContain('not a JSON object');
    expect((await fetch(`${url}/admin/v1/sessions`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })).status).toBe(401);
    expect((await fetch(`${url}/`, { method: 'HEAD' })).status).toBe(200);
    expect(((await (await fetch(`${url}/v1/models`)).json()) as any).data[0].id).toBe('Qwen/Qwen3-8B');
  });
});
