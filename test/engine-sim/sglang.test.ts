import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { SyncTokenizer } from '../../gateway/codec/tokenizer.js';
import { type EngineSim } from '../../engine-sim/index.js';
import { SCRIPT, SOLVE_0, TASK, complete, firstPrompt, nextPrompt, readSse, useEngineSims } from './helpers.js';

const engines = useEngineSims(7);
const { start } = engines;
let tk: SyncTokenizer;
beforeAll(() => {
  tk = engines.tokenizer();
});

const IM_END = 151645;
const LONG = {
  tasks: [
    { taskId: 'long', match: 'long', solve: [{ thought: 'word '.repeat(3000), tool: null }] },
  ],
  wanderProbability: 0,
};

type Entry = [number, number, string | null];
interface MetaInfo {
  id: string;
  finish_reason: { type: string; matched?: number; length?: number; message?: string } | null;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  weight_version: string;
  e2e_latency?: number;
  output_token_logprobs?: Entry[];
  output_top_logprobs?: Entry[][];
}
interface Generated {
  text: string;
  output_ids: number[];
  meta_info: MetaInfo;
}

function generate(url: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(`${url}/generate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });
}

async function generateJson(url: string, body: unknown): Promise<Generated> {
  const res = await generate(url, body);
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  return (await res.json()) as Generated;
}

function abortRequest(url: string, body: unknown): Promise<Response> {
  return fetch(`${url}/abort_request`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** Reads SSE events until the stream ends. */
async function events(
  res: Response,
): Promise<(Generated | '[DONE]' | { error: { message: string } })[]> {
  return (await readSse(res)) as (Generated | '[DONE]' | { error: { message: string } })[];
}

describe('engine-sim SGLang /generate', () => {
  it('answers in SGLang’s non-streaming shape, with the same sample as /v1/completions', async () => {
    const prompt = firstPrompt(tk, TASK);
    const solver = { script: { ...SCRIPT, wanderProbability: 0 } };
    const body = await generateJson((await start(solver)).url, {
      input_ids: prompt,
      sampling_params: {
        max_new_tokens: 200,
        temperature: 1,
        top_p: 1,
        skip_special_tokens: false,
      },
      return_logprob: true,
      rid: 'abc',
    });
    expect(Object.keys(body).sort()).toEqual(['meta_info', 'output_ids', 'text']);
    const ids = body.output_ids;
    // The end-of-turn token is sampled and returned in output_ids, but trimmed from the text.
    expect(ids.at(-1)).toBe(IM_END);
    expect(body.text).toBe(SOLVE_0);
    const meta = body.meta_info;
    expect(meta).toMatchObject({
      id: 'abc',
      finish_reason: { type: 'stop', matched: IM_END },
      prompt_tokens: prompt.length,
      completion_tokens: ids.length,
      cached_tokens: 0,
      weight_version: 'default',
    });
    expect(meta.e2e_latency).toBeGreaterThanOrEqual(0);
    expect(meta.output_token_logprobs!.map(([, id, text]) => [id, text])).toEqual(
      ids.map((id) => [id, null]),
    );
    expect(meta.output_top_logprobs).toBeUndefined();

    // A twin engine (same seed and script) answering the same request number through vLLM's API.
    const vllm = await complete((await start(solver)).url, {
      prompt,
      max_tokens: 200,
      logprobs: 0,
      return_token_ids: true,
    });
    expect(ids).toEqual(vllm.choices[0]!.token_ids);
    expect(meta.output_token_logprobs!.map(([lp]) => lp)).toEqual(
      vllm.choices[0]!.logprobs!.token_logprobs,
    );
  });

  it('leaves logprobs out unless asked, and defaults to 128 new tokens', async () => {
    const sim = await start({ script: LONG });
    const body = await generateJson(sim.url, { input_ids: firstPrompt(tk, 'long') });
    expect(body.output_ids).toHaveLength(128);
    expect(body.meta_info.finish_reason).toEqual({ type: 'length', length: 128 });
    expect(body.meta_info.output_token_logprobs).toBeUndefined();
    expect(body.meta_info.id).toMatch(/^[0-9a-f]{32}$/);
  });

  it('returns log-probs of output tokens only for logprob_start_len -1, and never the input ids', async () => {
    const sim = await start({ script: LONG });
    const input = firstPrompt(tk, 'long');
    const body = await generateJson(sim.url, { input_ids: input, return_logprob: true, logprob_start_len: -1, sampling_params: { max_new_tokens: 8 } });
    expect(body.output_ids).toHaveLength(8);
    expect(body.meta_info.output_token_logprobs).toHaveLength(8);
    expect(body.meta_info).not.toHaveProperty('input_token_logprobs');
    expect(body).not.toHaveProperty('input_ids');
  });

  it('gives token texts and top logprobs when asked', async () => {
    const sim = await start();
    const body = await generateJson(sim.url, {
      input_ids: firstPrompt(tk, 'hello'),
      sampling_params: { max_new_tokens: 50 },
      return_logprob: true,
      top_logprobs_num: 2,
      return_text_in_logprobs: true,
    });
    const entries = body.meta_info.output_token_logprobs!;
    expect(entries.map(([, id, text]) => [id, text])).toEqual(
      body.output_ids.map((id) => [id, tk.decode([id])]),
    );
    const top = body.meta_info.output_top_logprobs!;
    expect(top).toHaveLength(body.output_ids.length);
    for (const alternatives of top) {
      expect(alternatives).toHaveLength(2);
      for (const [lp, id, text] of alternatives) {
        expect(lp).toBeLessThanOrEqual(0);
        expect(text).toBe(tk.decode([id]));
      }
    }
  });

  it('stops at a stop_token_ids entry and at max_new_tokens', async () => {
    const sim = await start({ script: { ...SCRIPT, wanderProbability: 0 } });
    const prompt = firstPrompt(tk, TASK);
    const whole = await generateJson(sim.url, {
      input_ids: prompt,
      sampling_params: { max_new_tokens: 200 },
    });
    const stopId = whole.output_ids[3]!;
    const stopped = await generateJson(sim.url, {
      input_ids: prompt,
      sampling_params: { max_new_tokens: 200, stop_token_ids: [stopId] },
    });
    expect(stopped.output_ids).toEqual(
      whole.output_ids.slice(0, whole.output_ids.indexOf(stopId) + 1),
    );
    expect(stopped.meta_info.finish_reason).toEqual({ type: 'stop', matched: stopId });
    const cut = await generateJson(sim.url, {
      input_ids: prompt,
      sampling_params: { max_new_tokens: 5 },
    });
    expect(cut.output_ids).toEqual(whole.output_ids.slice(0, 5));
    expect(cut.meta_info.finish_reason).toEqual({ type: 'length', length: 5 });
  });

  it('reports cached prompt tokens on the next turn', async () => {
    const sim = await start({ script: { ...SCRIPT, wanderProbability: 0 } });
    const prompt0 = firstPrompt(tk, TASK);
    const turn0 = await generateJson(sim.url, {
      input_ids: prompt0,
      sampling_params: { max_new_tokens: 200 },
    });
    const prompt1 = nextPrompt(tk, prompt0, turn0.output_ids, 'calc.py');
    const turn1 = await generateJson(sim.url, {
      input_ids: prompt1,
      sampling_params: { max_new_tokens: 200 },
    });
    expect(turn1.meta_info.cached_tokens).toBeGreaterThan(prompt0.length - 16);
    expect(turn1.meta_info.cached_tokens % 16).toBe(0);
  });

  it('streams chunks that repeat all output so far, ending with data: [DONE]', async () => {
    const prompt = firstPrompt(tk, TASK);
    const request = {
      input_ids: prompt,
      sampling_params: { max_new_tokens: 200 },
      return_logprob: true,
    };
    const whole = await generateJson((await start()).url, request);
    const res = await generate((await start()).url, { ...request, stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const all = await events(res);
    expect(all.at(-1)).toBe('[DONE]');
    const chunks = all.slice(0, -1) as Generated[];
    // One chunk per engine step once decoding: a real stream, not one synthesised at the end.
    expect(chunks).toHaveLength(whole.output_ids.length);
    chunks.forEach((chunk, i) => {
      expect(chunk.output_ids).toEqual(whole.output_ids.slice(0, i + 1));
      expect(chunk.meta_info.completion_tokens).toBe(i + 1);
      expect(chunk.meta_info.output_token_logprobs).toEqual(
        whole.meta_info.output_token_logprobs!.slice(0, i + 1),
      );
      expect(whole.text.startsWith(chunk.text)).toBe(true);
      expect(chunk.meta_info.finish_reason).toEqual(
        i === chunks.length - 1 ? whole.meta_info.finish_reason : null,
      );
    });
    expect(chunks.at(-1)!.text).toBe(whole.text);
  });

  it('streams only the new part with incremental streaming', async () => {
    const prompt = firstPrompt(tk, TASK);
    const request = {
      input_ids: prompt,
      sampling_params: { max_new_tokens: 200 },
      return_logprob: true,
    };
    const whole = await generateJson((await start()).url, request);
    const sim = await start({ sglangIncrementalStreaming: true });
    const chunks = (await events(await generate(sim.url, { ...request, stream: true }))).slice(
      0,
      -1,
    ) as Generated[];
    expect(chunks.length).toBe(whole.output_ids.length);
    expect(chunks.flatMap((c) => c.output_ids)).toEqual(whole.output_ids);
    expect(chunks.flatMap((c) => c.meta_info.output_token_logprobs!)).toEqual(
      whole.meta_info.output_token_logprobs,
    );
    expect(chunks.map((c) => c.text).join('')).toBe(whole.text);
    expect(chunks.map((c) => c.meta_info.completion_tokens)).toEqual(chunks.map((_, i) => i + 1));
  });

  it('rejects bad requests in SGLang’s error envelope', async () => {
    const sim = await start({ kvCapacityTokens: 1024 });
    for (const body of [
      { text: 'hello' },
      { input_ids: [] },
      { input_ids: [1, -2] },
      { input_ids: [[1, 2]] },
      { input_ids: [1, 2], sampling_params: { max_new_tokens: 'many' } },
      // Prompt log-probs are not simulated: only output ones (-1, SGLang's default).
      { input_ids: [1, 2], return_logprob: true, logprob_start_len: 0 },
    ]) {
      const res = await generate(sim.url, body);
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: { message: expect.any(String) } });
    }
    const tooLong = { input_ids: firstPrompt(tk, 'hi'), sampling_params: { max_new_tokens: 2000 } };
    const res = await generate(sim.url, tooLong);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(
      /maximum context length/,
    );
    // Streamed, SGLang has already answered 200 when it finds the problem: it comes as an event.
    const streamed = await generate(sim.url, { ...tooLong, stream: true });
    expect(streamed.status).toBe(200);
    expect(await events(streamed)).toEqual([
      { error: { message: expect.stringMatching(/maximum context length/) } },
      '[DONE]',
    ]);
    expect(sim.stats().requestsReceived).toBe(0);
  });

  it('serves SGLang’s metric names beside vLLM’s', async () => {
    const sim = await start();
    await generateJson(sim.url, {
      input_ids: firstPrompt(tk, 'hi'),
      sampling_params: { max_new_tokens: 30 },
    });
    const text = await (await fetch(`${sim.url}/metrics`)).text();
    const label = '{model_name="Qwen/Qwen3-8B"}';
    for (const name of [
      'sglang:num_running_reqs',
      'sglang:num_queue_reqs',
      'sglang:token_usage',
      'sglang:cache_hit_rate',
    ]) {
      expect(text).toContain(`# TYPE ${name} gauge`);
      expect(text).toMatch(new RegExp(`^${name}${label.replace(/[{}]/g, '\\$&')} \\d`, 'm'));
    }
    expect(text).toContain(`sglang:generation_tokens_total${label} ${sim.stats().generatedTokens}`);
    expect(text).toContain('vllm:num_requests_running{');
  });
});

describe('engine-sim SGLang /abort_request', () => {
  /** A long request streaming on a real-time engine, read up to its first chunk. */
  async function startLong(sim: EngineSim, rid: string, signal?: AbortSignal) {
    const res = await generate(
      sim.url,
      {
        input_ids: firstPrompt(tk, 'a long one'),
        sampling_params: { max_new_tokens: 5000 },
        rid,
        stream: true,
      },
      signal,
    );
    const reader = res.body!.getReader();
    await reader.read(); // the first chunk arrived: the request is running
    expect(sim.stats().running).toBe(1);
    return reader;
  }

  async function readRest(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<string> {
    const decoder = new TextDecoder();
    let text = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return text;
      text += decoder.decode(value, { stream: true });
    }
  }

  it('aborts a streaming request by rid: the stream ends with finish_reason abort', async () => {
    // Real-time steps (6 ms each at timeScale 1) make the 3000-token answer take many seconds.
    const sim = await start({ timeScale: 1, script: LONG });
    const reader = await startLong(sim, 'long-1');
    const res = await abortRequest(sim.url, { rid: 'long-1' });
    expect(res.status).toBe(200);
    const rest = (await readRest(reader)).split('\n\n').filter(Boolean);
    expect(rest.at(-1)).toBe('data: [DONE]');
    const last = JSON.parse(rest.at(-2)!.slice('data: '.length)) as Generated;
    expect(last.meta_info.finish_reason).toMatchObject({
      type: 'abort',
      message: expect.any(String),
    });
    expect(last.output_ids.length).toBe(last.meta_info.completion_tokens);
    expect(last.output_ids.length).toBeLessThan(3000);
    expect(sim.stats()).toMatchObject({
      requestsAborted: 1,
      running: 0,
      kvUsedTokens: 0,
      abortRequestsReceived: 1,
    });
  });

  it('aborts a non-streaming request by rid: it answers with what it had', async () => {
    const sim = await start({ timeScale: 1, script: LONG });
    const pending = generateJson(sim.url, {
      input_ids: firstPrompt(tk, 'a long one'),
      sampling_params: { max_new_tokens: 5000 },
      return_logprob: true,
      rid: 'long-2',
    });
    await vi.waitFor(() => expect(sim.stats().generatedTokens).toBeGreaterThan(0), {
      timeout: 10_000,
      interval: 10,
    });
    await abortRequest(sim.url, { rid: 'long-2' });
    const body = await pending;
    expect(body.meta_info.finish_reason).toMatchObject({ type: 'abort' });
    expect(body.output_ids.length).toBeGreaterThan(0);
    expect(body.meta_info.output_token_logprobs).toHaveLength(body.output_ids.length);
    expect(sim.stats()).toMatchObject({ requestsAborted: 1, running: 0 });
  });

  it('ignores unknown rids, and abort_all aborts everything', async () => {
    const sim = await start({ timeScale: 1, script: LONG });
    const a = await startLong(sim, 'a');
    expect((await abortRequest(sim.url, { rid: 'nope' })).status).toBe(200);
    expect(sim.stats()).toMatchObject({ running: 1, requestsAborted: 0 });
    expect((await abortRequest(sim.url, { abort_all: true })).status).toBe(200);
    expect(await readRest(a)).toContain('"type":"abort"');
    expect(sim.stats()).toMatchObject({ running: 0, requestsAborted: 1 });
  });

  it('aborts a streaming request when the client disconnects', async () => {
    const sim = await start({ timeScale: 1, script: LONG });
    const controller = new AbortController();
    await startLong(sim, 'gone', controller.signal);
    controller.abort();
    await vi.waitFor(() => expect(sim.stats().requestsAborted).toBe(1), {
      timeout: 10_000,
      interval: 20,
    });
    expect(sim.stats()).toMatchObject({ running: 0, kvUsedTokens: 0, abortRequestsReceived: 0 });
  });
});
