import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEngineSim, type EngineSim } from '../../engine-sim/index.js';
import { readSseData } from '../../gateway/backends/sse.js';
import { TURN_HEADER } from '../../gateway/session/replay.js';
import type { Store } from '../../trajectory/index.js';
import { closeTestSession, openTestSession, SHELL_TOOLS, startTestGateway, tempStore, widgetScript } from '../helpers/gateway.js';
import { testEngineTokenizer } from '../helpers/stack.js';

// A client that lost the answer to a committed call (the gateway restarted between its commit and
// its reply) sends the same messages again: named by its turn position, it gets the stored turn.

const tools = SHELL_TOOLS;
let engine: EngineSim;
let store: Store;
let gateway: FastifyInstance;
let url: string;

async function startGateway(): Promise<void> {
  ({ gateway, url } = await startTestGateway(store, [{ name: 'e0', kind: 'vllm', url: engine.url }]));
}

async function chat(key: string, body: object, turn?: number): Promise<any> {
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...(turn === undefined ? {} : { [TURN_HEADER]: String(turn) }) },
    body: JSON.stringify(body),
  });
  expect(r.status).toBe(200);
  return r.json();
}

const first = [
  { role: 'system', content: 'You are an agent.' },
  { role: 'user', content: 'Fix the widget please.' },
];
const toolResult = (content: string) => ({ role: 'tool', content });

beforeAll(async () => {
  engine = await startEngineSim({ tokenizer: await testEngineTokenizer(), script: { wanderProbability: 0, tasks: [widgetScript()] }, timeScale: 0 });
  store = tempStore('gw-repeat-');
  await startGateway();
});

afterAll(async () => {
  await gateway?.close();
  await engine?.close();
  store?.close();
});

describe('a model call repeated with its turn position', () => {
  it('is answered from the committed turn, across a restart: no rollback, no second chain', async () => {
    const key = await openTestSession(url, 'rep-1');
    const t0 = await chat(key, { messages: first, tools }, 0);
    const again0 = await chat(key, { messages: first, tools }, 0);
    expect(again0.choices[0].message.tool_calls.map((c: any) => c.function)).toEqual(t0.choices[0].message.tool_calls.map((c: any) => c.function));
    expect(again0.choices[0].finish_reason).toBe('tool_calls');
    expect(again0.usage.completion_tokens).toBe(t0.usage.completion_tokens);

    const second = [...first, t0.choices[0].message, toolResult('widget.py')];
    const t1 = await chat(key, { messages: second, tools }, 1);
    // The restarted gateway knows the turn only from the store.
    await gateway.close();
    await startGateway();
    const again1 = await chat(key, { messages: second, tools }, 1);
    expect(again1.choices[0].message.tool_calls.map((c: any) => c.function)).toEqual(t1.choices[0].message.tool_calls.map((c: any) => c.function));

    const turns = await store.loadTurns('rep-1');
    expect(turns.map((t) => [t.chainIndex, t.seq, t.rolledBack])).toEqual([
      [0, 0, false],
      [0, 1, false],
    ]);
    const summary = await closeTestSession(url, 'rep-1');
    expect(summary).toMatchObject({ chains: 1, turns: 2, rollbacks: 0 });
  });

  it('streams the stored answer again', async () => {
    const key = await openTestSession(url, 'rep-stream');
    const t0 = await chat(key, { messages: first, tools }, 0);
    const r = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, [TURN_HEADER]: '0' },
      body: JSON.stringify({ messages: first, tools, stream: true }),
    });
    let reasoning = '';
    const calls: unknown[] = [];
    for await (const data of readSseData(r.body!)) {
      if (data === '[DONE]') break;
      const delta = JSON.parse(data).choices[0]?.delta ?? {};
      reasoning += delta.reasoning_content ?? '';
      if (delta.tool_calls) calls.push(delta.tool_calls[0].function);
    }
    expect(reasoning.trim()).toBe(t0.choices[0].message.reasoning_content);
    expect(calls).toEqual(t0.choices[0].message.tool_calls.map((c: any) => c.function));
    expect((await store.loadTurns('rep-stream')).length).toBe(1);
  });

  it('is a rollback without the header, or when the position is not the last turn', async () => {
    const key = await openTestSession(url, 'rep-none');
    const t0 = await chat(key, { messages: first, tools });
    const second = [...first, t0.choices[0].message, toolResult('widget.py')];
    await chat(key, { messages: second, tools });
    await chat(key, { messages: second, tools });
    await chat(key, { messages: second, tools }, 0);
    const turns = await store.loadTurns('rep-none');
    expect(turns.map((t) => t.rolledBack)).toEqual([false, true, true, false]);
  });
});
