import { beforeAll, describe, expect, it, vi } from 'vitest';
import { type EngineSim } from '../../engine-sim/index.js';
import {
  BackendError,
  type Backend,
  type BackendKind,
  type GenerateResult,
} from '../../gateway/backends/backend.js';
import { createBackend } from '../../gateway/backends/index.js';
import { SglangBackend } from '../../gateway/backends/sglang.js';
import { VllmBackend } from '../../gateway/backends/vllm.js';
import type { SyncTokenizer } from '../../gateway/codec/tokenizer.js';
import { firstPrompt, nextPrompt, useEngineSims } from '../engine-sim/helpers.js';
import { startRecordingProxy } from '../helpers/recording-proxy.js';

const MODEL = 'Qwen/Qwen3-8B';
const TASK = 'Fix the failing test in calc.py';
const LONG = {
  tasks: [
    { taskId: 'long', match: 'long', solve: [{ thought: 'word '.repeat(3000), tool: null }] },
  ],
  wanderProbability: 0,
};
const KINDS: BackendKind[] = ['vllm', 'sglang'];
/** Every sampling parameter of a request, at its no-truncation, no-penalty value. */
const UNTRUNCATED = { temperature: 1, topP: 1, topK: -1, minP: 0, presencePenalty: 0, frequencyPenalty: 0, repetitionPenalty: 1 };

const engines = useEngineSims(11);
const { start } = engines;
let tk: SyncTokenizer;
beforeAll(() => {
  tk = engines.tokenizer();
});

const backend = (kind: BackendKind, sim: EngineSim): Backend =>
  createBackend({ kind, url: sim.url }, MODEL);

/** Two turns of the scripted task, each prompt extending the last with what was sampled. */
async function episode(b: Backend): Promise<GenerateResult[]> {
  const prompt0 = firstPrompt(tk, TASK);
  const turn0 = await b.generate({ promptIds: prompt0, maxTokens: 300, ...UNTRUNCATED });
  const prompt1 = nextPrompt(tk, prompt0, turn0.ids, 'calc.py test_calc.py');
  const turn1 = await b.generate({ promptIds: prompt1, maxTokens: 300, ...UNTRUNCATED });
  return [turn0, turn1];
}

describe('createBackend', () => {
  it('chooses the backend by instance kind', () => {
    expect(createBackend({ kind: 'vllm', url: 'http://x' }, MODEL)).toBeInstanceOf(VllmBackend);
    expect(createBackend({ kind: 'sglang', url: 'http://x' }, MODEL)).toBeInstanceOf(SglangBackend);
    expect(createBackend({ kind: 'sglang', url: 'http://x' }, MODEL).kind).toBe('sglang');
  });
});

describe('VllmBackend and SglangBackend against engine-sim', () => {
  it('return the same ids, logprobs and cache hits for the same episode on twin engines', async () => {
    const vllm = await episode(backend('vllm', await start()));
    const sglang = await episode(backend('sglang', await start()));
    // SGLang's incremental streaming mode delivers the same tokens in smaller chunks.
    const incremental = await episode(
      backend('sglang', await start({ sglangIncrementalStreaming: true })),
    );
    for (const turns of [sglang, incremental]) expect(turns).toEqual(vllm);
    const [turn0, turn1] = vllm as [GenerateResult, GenerateResult];
    expect(turn0.ids.length).toBeGreaterThan(10);
    expect(turn0.logprobs).toHaveLength(turn0.ids.length);
    expect(turn0.finishReason).toBe('stop');
    expect(turn0.ids.at(-1)).toBe(tk.tokenId('<|im_end|>'));
    expect(turn0.cachedTokens).toBe(0);
    expect(turn1.cachedTokens).toBeGreaterThan(0);
    expect(turn1.promptTokens).toBeGreaterThan(turn0.promptTokens);
  });

  it('vllm: asks for output ids only, and the engine sends no prompt back', async () => {
    const sim = await start({ script: LONG });
    const proxy = await startRecordingProxy(sim.url);
    try {
      // A long prompt: an echo of it would outweigh everything else in the stream.
      const prompt = Uint32Array.from(firstPrompt(tk, `long ${'context '.repeat(4000)}`));
      const result = await backend('vllm', { ...sim, url: proxy.url }).generate({ promptIds: prompt, maxTokens: 50, ...UNTRUNCATED });
      const [seen] = proxy.recorded;
      expect(seen!.promptIds).toEqual(Array.from(prompt));
      expect(seen!.request).toMatchObject({ logprobs: 0, return_tokens_as_token_ids: true });
      expect(seen!.request).not.toHaveProperty('return_token_ids');
      const choices = seen!.chunks.flatMap((c) => c.choices as Record<string, unknown>[]);
      expect(choices.length).toBeGreaterThan(1);
      for (const choice of choices) {
        expect(choice.prompt_token_ids ?? null).toBeNull();
        expect(choice.token_ids ?? null).toBeNull();
      }
      expect(JSON.stringify(seen!.chunks).length).toBeLessThan(JSON.stringify(Array.from(prompt)).length);
      // The ids came from the `token_id:<id>` tokens, exactly as the engine sampled them.
      expect(result.ids).toHaveLength(50);
      expect(result.ids).toEqual(seen!.tokenIds);
      expect(result.logprobs).toEqual(seen!.logprobs);
    } finally {
      await proxy.close();
    }
  });

  it.each(KINDS)('%s: streams tokens as the engine produces them', async (kind) => {
    const b = backend(kind, await start());
    const calls: { ids: number[]; logprobs: number[] }[] = [];
    const result = await b.generate({
      promptIds: firstPrompt(tk, TASK),
      maxTokens: 300,
      ...UNTRUNCATED,
      onTokens: (ids, logprobs) => calls.push({ ids, logprobs }),
    });
    expect(calls.length).toBeGreaterThan(1);
    expect(calls.flatMap((c) => c.ids)).toEqual(result.ids);
    expect(calls.flatMap((c) => c.logprobs)).toEqual(result.logprobs);
  });

  it.each(KINDS)('%s: reports a max-tokens cut as length', async (kind) => {
    const result = await backend(kind, await start()).generate({
      promptIds: firstPrompt(tk, TASK),
      maxTokens: 7,
      ...UNTRUNCATED,
    });
    expect(result.finishReason).toBe('length');
    expect(result.ids).toHaveLength(7);
  });

  it.each(KINDS)('%s: an abort mid-stream ends the engine request', async (kind) => {
    // Real-time steps (6 ms each at timeScale 1) make the 3000-token answer take many seconds.
    const sim = await start({ timeScale: 1, script: LONG });
    const controller = new AbortController();
    let received = 0;
    const result = await backend(kind, sim).generate({
      promptIds: firstPrompt(tk, 'a long one'),
      maxTokens: 5000,
      ...UNTRUNCATED,
      signal: controller.signal,
      onTokens: (ids) => {
        received += ids.length;
        controller.abort();
      },
    });
    expect(result.finishReason).toBe('abort');
    expect(result.ids.length).toBe(received);
    expect(result.logprobs).toHaveLength(received);
    await vi.waitFor(
      () => expect(sim.stats()).toMatchObject({ requestsAborted: 1, running: 0, kvUsedTokens: 0 }),
      {
        timeout: 10_000,
        interval: 20,
      },
    );
    expect(sim.stats().requestsFinished).toBe(0);
    // SGLang is also told by rid, so the request ends even where a disconnect goes unnoticed.
    if (kind === 'sglang') {
      await vi.waitFor(() => expect(sim.stats().abortRequestsReceived).toBe(1), {
        timeout: 10_000,
        interval: 20,
      });
    }
  });

  it.each(KINDS)('%s: an already aborted request never reaches the engine', async (kind) => {
    const sim = await start();
    const result = await backend(kind, sim).generate({
      promptIds: firstPrompt(tk, TASK),
      maxTokens: 50,
      ...UNTRUNCATED,
      signal: AbortSignal.abort(),
    });
    expect(result).toMatchObject({ ids: [], logprobs: [], finishReason: 'abort' });
    expect(sim.stats().requestsReceived).toBe(0);
  });

  it.each(KINDS)('%s: engine errors become BackendErrors', async (kind) => {
    const sim = await start({ kvCapacityTokens: 1024 });
    const b = backend(kind, sim);
    const ask = (promptIds: number[], maxTokens = 50) =>
      b.generate({ promptIds, maxTokens, ...UNTRUNCATED });
    // A 400 for a malformed prompt.
    await expect(ask([1, -5])).rejects.toSatisfy(
      // The request's fault: the client gets a 400 and the router does not fail over on it.
      (e) => e instanceof BackendError && /400/.test(e.message) && e.status === 400,
    );
    // Too long for the engine: a 400 from vLLM, an error event in a 200 stream from SGLang.
    await expect(ask(firstPrompt(tk, 'hi'), 2000)).rejects.toBeInstanceOf(BackendError);
    expect(sim.stats().requestsReceived).toBe(0);
    const url = sim.url;
    await sim.close();
    const gone = createBackend({ kind, url }, MODEL);
    await expect(
      gone.generate({ promptIds: firstPrompt(tk, 'hi'), maxTokens: 5, ...UNTRUNCATED }),
    ).rejects.toSatisfy((e) => e instanceof BackendError && e.status === 503);
  });
});
