import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEngineSim, type EngineSim } from '../../engine-sim/index.js';
import type { Store } from '../../trajectory/index.js';
import { openTestSession, sessionInfo, SHELL_TOOLS, startTestGateway, tempStore } from '../helpers/gateway.js';
import { testCodec, testEngineTokenizer } from '../helpers/stack.js';

const tools = SHELL_TOOLS;
const script = {
  wanderProbability: 0,
  tasks: [
    {
      taskId: 'widget',
      match: 'Fix the widget',
      solve: [
        { thought: 'List the files first.', tool: { name: 'shell', arguments: { command: 'ls' } } },
        { thought: 'Done now.', tool: null, content: 'The widget is fixed.' },
      ],
    },
  ],
};
const first = [
  { role: 'system', content: 'You are an agent.' },
  { role: 'user', content: 'Fix the widget please.' },
];

/** Twin engines (same seed and script), one behind each API. */
const engines: Record<'sg' | 'vl', EngineSim | undefined> = { sg: undefined, vl: undefined };
let store: Store;
let gateway: FastifyInstance;
let url: string;

beforeAll(async () => {
  engines.sg = await startEngineSim({ tokenizer: await testEngineTokenizer(), script, timeScale: 0, seed: 3 });
  engines.vl = await startEngineSim({ tokenizer: await testEngineTokenizer(), script, timeScale: 0, seed: 3 });
  store = tempStore('gw-sglang-');
  ({ gateway, url } = await startTestGateway(store, [
    { name: 'sg', kind: 'sglang', url: engines.sg.url },
    { name: 'vl', kind: 'vllm', url: engines.vl.url },
  ]));
});

afterAll(async () => {
  await gateway?.close();
  await Promise.all(Object.values(engines).map((e) => e?.close()));
  store?.close();
});

const openSession = (sessionId: string, homeInstance: string) => openTestSession(url, sessionId, sessionInfo({ homeInstance }));

async function chat(key: string, messages: object[]): Promise<any> {
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ messages, tools }),
  });
  expect(r.status).toBe(200);
  return r.json();
}

/** The scripted two-turn episode: a tool call, its result, then the answer. */
async function runEpisode(sessionId: string, homeInstance: string): Promise<void> {
  const key = await openSession(sessionId, homeInstance);
  const t1 = await chat(key, first);
  const assistant = t1.choices[0].message;
  expect(assistant.tool_calls[0].function).toEqual({ name: 'shell', arguments: '{"command":"ls"}' });
  const t2 = await chat(key, [...first, assistant, { role: 'tool', tool_call_id: assistant.tool_calls[0].id, content: 'widget.py' }]);
  expect(t2.choices[0].message.content).toBe('The widget is fixed.');
}

describe('gateway with an SGLang engine', () => {
  it('records the same token-exact trajectory for a session homed on SGLang as on vLLM', async () => {
    await runEpisode('s-sglang', 'sg');
    await runEpisode('s-vllm', 'vl');
    const codec = await testCodec();
    const sglang = (await store.loadTurns('s-sglang'));
    expect(sglang).toHaveLength(2);
    for (const turn of sglang) {
      expect(turn.sampled.at(-1)).toBe(codec.encoder.endOfTurnId);
      expect(turn.logprobs).toHaveLength(turn.sampled.length);
      expect(turn.logprobs.every((p) => p <= 0)).toBe(true);
    }
    expect(engines.sg!.stats()).toMatchObject({ requestsFinished: 2, running: 0 });
    const strip = (turns: typeof sglang) => turns.map((t) => ({ promptDelta: t.promptDelta, sampled: t.sampled, logprobs: t.logprobs }));
    expect(strip(sglang)).toEqual(strip((await store.loadTurns('s-vllm'))));
  });
});
