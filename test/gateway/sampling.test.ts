import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEngineSim, type EngineSim } from '../../engine-sim/index.js';
import type { BackendKind, GenerateRequest } from '../../gateway/backends/backend.js';
import { createBackend } from '../../gateway/backends/index.js';
import { SAMPLING_DEFAULTS } from '../../gateway/sampling-schema.js';
import type { Store } from '../../trajectory/index.js';
import { openTestSession, sessionInfo, startTestGateway, tempStore, widgetScript } from '../helpers/gateway.js';
import { startRecordingProxy, type PostedBody } from '../helpers/recording-proxy.js';
import { testEngineTokenizer } from '../helpers/stack.js';

const script = { wanderProbability: 0, tasks: [widgetScript()] };
const PROMPT = [1, 2, 3];

/** Every parameter off its default, so each one seen on the wire is the one asked for. */
const CHOSEN = { temperature: 0.7, topP: 0.9, topK: 7, minP: 0.05, presencePenalty: 0.25, frequencyPenalty: 0.5, repetitionPenalty: 1.125 };
const CHOSEN_VLLM = { temperature: 0.7, top_p: 0.9, top_k: 7, min_p: 0.05, presence_penalty: 0.25, frequency_penalty: 0.5, repetition_penalty: 1.125 };
/** The no-truncation, no-penalty values, as the engines name them. */
const NEUTRAL_VLLM = { temperature: 1, top_p: 1, top_k: -1, min_p: 0, presence_penalty: 0, frequency_penalty: 0, repetition_penalty: 1 };

let engine: EngineSim;
let proxy: Awaited<ReturnType<typeof startRecordingProxy>>;

beforeAll(async () => {
  engine = await startEngineSim({ tokenizer: await testEngineTokenizer(), script, timeScale: 0 });
  proxy = await startRecordingProxy(engine.url);
});

afterAll(async () => {
  await proxy?.close();
  await engine?.close();
});

/** The sampling part of the last body the engine received: top level for vLLM, `sampling_params` for SGLang. */
function lastSampling(kind: BackendKind): Record<string, unknown> {
  const seen = proxy.posted.at(-1) as PostedBody;
  expect(seen.path).toBe(kind === 'vllm' ? '/v1/completions' : '/generate');
  return kind === 'vllm' ? seen.body : (seen.body.sampling_params as Record<string, unknown>);
}

describe('backends send every sampling parameter explicitly', () => {
  it.each(['vllm', 'sglang'] as const)('%s: the chosen values, and the neutral ones when nothing is chosen', async (kind) => {
    const backend = createBackend({ kind, url: proxy.url }, 'Qwen/Qwen3-8B');
    const request: GenerateRequest = { promptIds: PROMPT, maxTokens: 4, ...CHOSEN };
    await backend.generate(request);
    expect(lastSampling(kind)).toMatchObject(CHOSEN_VLLM);
    // At the defaults too: an engine's generation_config.json must not fill in a top_k of its own.
    await backend.generate({ ...request, ...SAMPLING_DEFAULTS, maxTokens: 4 });
    expect(lastSampling(kind)).toMatchObject(NEUTRAL_VLLM);
  });
});

describe('gateway: a session carries its sampling to the engine and records it per turn', () => {
  let store: Store;
  let url: string;
  let close: () => Promise<void>;
  beforeAll(async () => {
    store = tempStore('sampling-');
    const started = await startTestGateway(store, [{ name: 'e0', kind: 'vllm', url: proxy.url }]);
    url = started.url;
    close = () => started.gateway.close();
  });
  afterAll(async () => {
    await close?.();
    store?.close();
  });

  it("sends the session's parameters, the agent's temperature, and stores the temperature and log-prob mode", async () => {
    const sampling = { ...SAMPLING_DEFAULTS, ...CHOSEN, maxTokens: 256, logprobsMode: 'processed' as const };
    const key = await openTestSession(url, 's-sampling', sessionInfo({ sampling }));
    const chat = (body: object) =>
      fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'Fix the widget please.' }], ...body }),
      });
    expect((await chat({})).status).toBe(200);
    expect(lastSampling('vllm')).toMatchObject(CHOSEN_VLLM);
    // The agent's own temperature wins for its call, and is what the turn records.
    expect((await chat({ temperature: 0.3, messages: [{ role: 'user', content: 'Fix the widget, again.' }] })).status).toBe(200);
    expect(lastSampling('vllm')).toMatchObject({ ...CHOSEN_VLLM, temperature: 0.3 });
    const turns = await store.loadTurns('s-sampling');
    expect(turns.map((t) => [t.temperature, t.logprobsMode])).toEqual([
      [0.7, 'processed'],
      [0.3, 'processed'],
    ]);
  });

  it('an older worker that sends only temperature, topP and maxTokens gets the neutral defaults', async () => {
    const key = await openTestSession(url, 's-old-worker', { ...sessionInfo(), sampling: { temperature: 1, topP: 1, maxTokens: 64 } as never });
    const r = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'Fix the widget please.' }] }),
    });
    expect(r.status).toBe(200);
    expect(lastSampling('vllm')).toMatchObject(NEUTRAL_VLLM);
    expect((await store.loadTurns('s-old-worker')).map((t) => t.logprobsMode)).toEqual(['raw']);
  });

  it('a session an older gateway stored without the new keys gets the neutral defaults, not the engine’s', async () => {
    const info = { ...sessionInfo(), sampling: { temperature: 1, topP: 1, maxTokens: 64 } as never };
    await store.createSession({ sessionId: 's-stored-old', key: 'k-stored-old', episodeId: 's-stored-old', attempt: 0, info });
    const r = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer k-stored-old' },
      body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'Fix the widget please.' }] }),
    });
    expect(r.status).toBe(200);
    expect(lastSampling('vllm')).toMatchObject(NEUTRAL_VLLM);
    expect((await store.loadTurns('s-stored-old')).map((t) => [t.temperature, t.logprobsMode])).toEqual([[1, 'raw']]);
  });
});
