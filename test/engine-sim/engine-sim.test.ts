import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { SyncTokenizer } from '../../gateway/codec/tokenizer.js';
import {
  SCRIPT,
  SOLVE_0,
  TASK,
  complete,
  firstPrompt,
  nextPrompt,
  post,
  readSse,
  type Choice,
  type Completion,
  type Usage,
  useEngineSims,
} from './helpers.js';

const engines = useEngineSims(7);
const { start } = engines;
let tk: SyncTokenizer;
beforeAll(() => {
  tk = engines.tokenizer();
});

const SOLVE_1 =
  '<think>\nThe bug is in add().\n</think>\n\n<tool_call>\n{"name": "edit", "arguments": {"path": "calc.py", "old": "a - b", "new": "a + b", "flags": [1, 2.5, null, true]}}\n</tool_call>';
const SOLVE_2 = '<think>\nTests pass now.\n</think>\n\nI fixed add() in calc.py.';
const WANDER_0 =
  '<think>\nMaybe I should read the README.\n</think>\n\n<tool_call>\n{"name": "bash", "arguments": {"command": "cat README.md"}}\n</tool_call>';
const WANDER_1 =
  '<think>\nLet me check the weather instead.\n</think>\n\n<tool_call>\n{"name": "bash", "arguments": {"command": "curl wttr.in"}}\n</tool_call>';
const DONE = '<think>\n\n</think>\n\nDone.';
const IM_END = 151645;

describe('engine-sim /v1/completions', () => {
  it('answers in vLLM’s non-streaming shape', async () => {
    const sim = await start({ script: { ...SCRIPT, wanderProbability: 0 } });
    const prompt = firstPrompt(tk, TASK);
    const res = await post(
      sim.url,
      { prompt, max_tokens: 200, logprobs: 2, return_token_ids: true },
      { 'x-request-id': 'abc' },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('abc');
    const body = (await res.json()) as Completion;
    expect(body).toMatchObject({
      id: 'cmpl-abc',
      object: 'text_completion',
      model: 'Qwen/Qwen3-8B',
    });
    expect(Number.isInteger(body.created)).toBe(true);
    expect(body.choices).toHaveLength(1);
    const c = body.choices[0]!;
    expect(Object.keys(c).sort()).toEqual(
      [
        'finish_reason',
        'index',
        'logprobs',
        'prompt_logprobs',
        'prompt_token_ids',
        'stop_reason',
        'text',
        'token_ids',
      ].sort(),
    );
    expect(c).toMatchObject({
      index: 0,
      text: SOLVE_0,
      finish_reason: 'stop',
      stop_reason: null,
      prompt_token_ids: prompt,
    });
    const ids = c.token_ids!;
    // The end-of-turn token is sampled and returned, but not part of the text.
    expect(ids.at(-1)).toBe(IM_END);
    expect(tk.decode(ids)).toBe(`${SOLVE_0}<|im_end|>`);
    const lp = c.logprobs!;
    expect(Object.keys(lp).sort()).toEqual([
      'text_offset',
      'token_logprobs',
      'tokens',
      'top_logprobs',
    ]);
    for (const list of [lp.text_offset, lp.token_logprobs, lp.tokens, lp.top_logprobs])
      expect(list).toHaveLength(ids.length);
    expect(lp.tokens).toEqual(ids.map((id) => tk.decode([id])));
    expect(lp.text_offset[0]).toBe(0);
    lp.token_logprobs.forEach((v, i) => {
      expect(v).toBeLessThanOrEqual(0);
      expect(v).toBeGreaterThanOrEqual(-4);
      // The sampled token is in its top_logprobs with the same value, plus up to 2 alternatives.
      expect(lp.top_logprobs[i]![lp.tokens[i]!]).toBe(v);
      expect(Object.keys(lp.top_logprobs[i]!).length).toBeLessThanOrEqual(3);
      if (i > 0)
        expect(lp.text_offset[i]).toBe(lp.text_offset[i - 1]! + [...lp.tokens[i - 1]!].length);
    });
    expect(body.usage).toEqual({
      prompt_tokens: prompt.length,
      completion_tokens: ids.length,
      total_tokens: prompt.length + ids.length,
      prompt_tokens_details: { cached_tokens: 0 },
    });
  });

  it('leaves token ids and logprobs out unless asked, and accepts a [[ids]] prompt', async () => {
    const sim = await start();
    const body = await complete(sim.url, { prompt: [firstPrompt(tk, 'hello')], max_tokens: 50 });
    expect(body.choices[0]).toMatchObject({
      text: DONE,
      token_ids: null,
      prompt_token_ids: null,
      logprobs: null,
    });
    expect(body.id).toMatch(/^cmpl-[0-9a-f]{32}$/);
  });

  it('streams SSE chunks whose token ids, text and logprobs add up to the non-streamed answer', async () => {
    const prompt = firstPrompt(tk, TASK);
    const request = { prompt, max_tokens: 200, logprobs: 0, return_token_ids: true };
    const whole = await complete((await start()).url, request);
    const res = await post((await start()).url, {
      ...request,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = await readSse(res);
    expect(events.at(-1)).toBe('[DONE]');
    const usageChunk = events.at(-2) as { choices: unknown[]; usage: Usage; object: string };
    expect(usageChunk.object).toBe('text_completion');
    expect(usageChunk.choices).toEqual([]);
    const chunks = events.slice(0, -2) as { id: string; object: string; choices: Choice[] }[];
    // One token per engine step once decoding: a real stream, not one synthesised at the end.
    expect(chunks.length).toBe(whole.choices[0]!.token_ids!.length);
    for (const chunk of chunks) {
      expect(chunk.object).toBe('text_completion');
      expect(chunk.id).toBe(chunks[0]!.id);
      expect(chunk.choices).toHaveLength(1);
    }
    const choices = chunks.map((c) => c.choices[0]!);
    expect(choices[0]!.prompt_token_ids).toEqual(prompt);
    expect(choices.slice(1).every((c) => c.prompt_token_ids === null)).toBe(true);
    expect(choices.slice(0, -1).every((c) => c.finish_reason === null)).toBe(true);
    expect(choices.at(-1)!.finish_reason).toBe('stop');

    const w = whole.choices[0]!;
    expect(choices.flatMap((c) => c.token_ids!)).toEqual(w.token_ids);
    expect(choices.map((c) => c.text).join('')).toBe(w.text);
    expect(choices.flatMap((c) => c.logprobs!.token_logprobs)).toEqual(w.logprobs!.token_logprobs);
    expect(choices.flatMap((c) => c.logprobs!.text_offset)).toEqual(w.logprobs!.text_offset);
    expect(usageChunk.usage).toEqual(whole.usage);
  });

  it('streams without a usage chunk unless asked', async () => {
    const sim = await start();
    const events = await readSse(
      await post(sim.url, { prompt: firstPrompt(tk, 'hi'), max_tokens: 20, stream: true }),
    );
    expect(events.at(-1)).toBe('[DONE]');
    expect(events.slice(0, -1).every((e) => !('usage' in (e as object)))).toBe(true);
  });

  it('writes scripted turns 0, 1 and 2 in Qwen3’s tool-call format, then a plain answer', async () => {
    const sim = await start({ script: { ...SCRIPT, wanderProbability: 0 } });
    let prompt = firstPrompt(tk, TASK);
    const texts: string[] = [];
    for (let turn = 0; turn < 4; turn++) {
      const c = (await complete(sim.url, { prompt, max_tokens: 500, return_token_ids: true }))
        .choices[0]!;
      expect(c.finish_reason).toBe('stop');
      texts.push(tk.decode(c.token_ids!));
      prompt = nextPrompt(tk, prompt, c.token_ids!, `result of turn ${turn}`);
    }
    expect(texts).toEqual([SOLVE_0, SOLVE_1, SOLVE_2, DONE].map((t) => `${t}<|im_end|>`));
  });

  it('keeps an episode on its branch: a prompt holding wander’s first turn continues wandering', async () => {
    const wanderer = await start({ script: { ...SCRIPT, wanderProbability: 1 } });
    const prompt0 = firstPrompt(tk, TASK);
    const turn0 = (
      await complete(wanderer.url, { prompt: prompt0, max_tokens: 500, return_token_ids: true })
    ).choices[0]!;
    expect(turn0.text).toBe(WANDER_0);
    // An engine that never wanders by itself still follows the branch the prompt shows.
    const solver = await start({ script: { ...SCRIPT, wanderProbability: 0 } });
    const prompt1 = nextPrompt(tk, prompt0, turn0.token_ids!, 'README: calc');
    const turn1 = (
      await complete(solver.url, { prompt: prompt1, max_tokens: 500, return_token_ids: true })
    ).choices[0]!;
    expect(turn1.text).toBe(WANDER_1);
    const prompt2 = nextPrompt(tk, prompt1, turn1.token_ids!, 'sunny');
    const turn2 = await complete(solver.url, { prompt: prompt2, max_tokens: 500 });
    expect(turn2.choices[0]!.text).toBe(DONE);
  });

  it('draws the branch per sample, reproducibly for a seed', async () => {
    const draw = async (seed: number) => {
      const sim = await start({ seed });
      const texts: string[] = [];
      for (let i = 0; i < 16; i++)
        texts.push(
          (await complete(sim.url, { prompt: firstPrompt(tk, TASK), max_tokens: 500 })).choices[0]!
            .text,
        );
      return texts;
    };
    const a = await draw(1);
    expect(new Set(a)).toEqual(new Set([SOLVE_0, WANDER_0]));
    expect(await draw(1)).toEqual(a);
  });

  it('reports cached prompt tokens: none at first, the shared prefix blocks afterwards', async () => {
    const sim = await start();
    const first = firstPrompt(tk, 'What is 2+2?');
    const a = await complete(sim.url, { prompt: first, max_tokens: 50, return_token_ids: true });
    expect(a.usage.prompt_tokens_details.cached_tokens).toBe(0);

    const sibling = firstPrompt(tk, 'What is 3+3?');
    let shared = 0;
    while (first[shared] === sibling[shared]) shared++;
    const b = await complete(sim.url, { prompt: sibling, max_tokens: 50 });
    expect(b.usage.prompt_tokens_details.cached_tokens).toBe(Math.floor(shared / 16) * 16);
    expect(shared).toBeGreaterThan(100);

    // The next turn reuses the whole previous turn, sampled tokens included (full blocks only).
    const next = nextPrompt(tk, first, a.choices[0]!.token_ids!, 'ok');
    const c = await complete(sim.url, { prompt: next, max_tokens: 50 });
    const computed = first.length + a.choices[0]!.token_ids!.length - 1;
    expect(c.usage.prompt_tokens_details.cached_tokens).toBe(Math.floor(computed / 16) * 16);
    expect(sim.stats()).toMatchObject({
      requestsFinished: 3,
      cachedTokens:
        b.usage.prompt_tokens_details.cached_tokens + c.usage.prompt_tokens_details.cached_tokens,
    });
  });

  it('evicts least recently used blocks when the KV cache is small', async () => {
    // 10 blocks of 16 tokens; each request holds 5 (64 prompt tokens + 16 max_tokens).
    const sim = await start({ kvCapacityTokens: 160, blockSize: 16 });
    const prompt = (base: number) => Array.from({ length: 64 }, (_, i) => base + i);
    const cached = async (base: number) =>
      (await complete(sim.url, { prompt: prompt(base), max_tokens: 16 })).usage
        .prompt_tokens_details.cached_tokens;
    expect(await cached(1000)).toBe(0); // A
    expect(await cached(1000)).toBe(48); // A again: 3 full blocks (the last prompt token is always computed)
    expect(await cached(2000)).toBe(0); // B
    expect(sim.stats().evictedBlocks).toBe(0);
    expect(await cached(3000)).toBe(0); // C needs room: A, least recently used, is evicted
    expect(sim.stats().evictedBlocks).toBeGreaterThan(0);
    expect(await cached(2000)).toBe(48); // B survived
    expect(await cached(1000)).toBeLessThan(48); // A did not
    expect(sim.stats().kvResidentTokens).toBeLessThanOrEqual(160);
  });

  it('stops at max_tokens with finish_reason length', async () => {
    const sim = await start({ script: { ...SCRIPT, wanderProbability: 0 } });
    const c = (
      await complete(sim.url, {
        prompt: firstPrompt(tk, TASK),
        max_tokens: 3,
        return_token_ids: true,
      })
    ).choices[0]!;
    expect(c.finish_reason).toBe('length');
    expect(c.stop_reason).toBeNull();
    expect(c.token_ids).toHaveLength(3);
    expect(c.text).toBe(tk.decode(c.token_ids!));
  });

  it('stops at a stop_token_ids entry and reports it as stop_reason', async () => {
    const sim = await start({ script: { ...SCRIPT, wanderProbability: 0 } });
    const toolCall = tk.tokenId('<tool_call>');
    const c = (
      await complete(sim.url, {
        prompt: firstPrompt(tk, TASK),
        max_tokens: 500,
        return_token_ids: true,
        stop_token_ids: [toolCall],
      })
    ).choices[0]!;
    expect(c).toMatchObject({
      finish_reason: 'stop',
      stop_reason: toolCall,
      text: '<think>\nI should look at the files first.\n</think>\n\n',
    });
    expect(c.token_ids!.at(-1)).toBe(toolCall);
  });

  it('rejects bad requests with 400 in the OpenAI error envelope', async () => {
    const sim = await start();
    const cases: [unknown, string | null][] = [
      [{ prompt: 'Hello there' }, 'prompt'],
      [{ prompt: [] }, 'prompt'],
      [{ prompt: [[1, 2], [3]] }, 'prompt'],
      [{ prompt: [1, 2], max_tokens: 0 }, 'max_tokens'],
      [{ prompt: [1, 2], logprobs: -1 }, 'logprobs'],
      [{ prompt: [1, 2], n: 2 }, 'n'],
      [{ prompt: [1, 2], max_tokens: 10_000_000 }, 'max_tokens'],
    ];
    for (const [body, param] of cases) {
      const res = await post(sim.url, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      const err = (await res.json()) as { error: Record<string, unknown> };
      expect(err).toEqual({
        error: { message: expect.any(String), type: 'BadRequestError', param, code: 400 },
      });
    }
    const bad = await fetch(`${sim.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{',
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: number } }).error.code).toBe(400);
    const wrongModel = await post(sim.url, { model: 'other', prompt: [1] });
    expect(wrongModel.status).toBe(404);
    expect(sim.stats().requestsReceived).toBe(0);
  });

  it('accepts unknown fields and ignores sampling knobs', async () => {
    const sim = await start();
    const body = await complete(sim.url, {
      model: 'Qwen/Qwen3-8B',
      prompt: firstPrompt(tk, 'hi'),
      temperature: 0.7,
      top_p: 0.95,
      skip_special_tokens: false,
      some_future_field: { x: 1 },
      max_tokens: 30,
    });
    // Without skip_special_tokens the text still leaves out the token that stopped generation.
    expect(body.choices[0]!.text).toBe('<think>\n\n</think>\n\nDone.');
  });

  it('serves /v1/models, /health and /metrics with vLLM’s names', async () => {
    const sim = await start();
    await complete(sim.url, { prompt: firstPrompt(tk, 'hi'), max_tokens: 30 });
    expect((await fetch(`${sim.url}/health`)).status).toBe(200);
    const models = (await (await fetch(`${sim.url}/v1/models`)).json()) as {
      object: string;
      data: { id: string; object: string }[];
    };
    expect(models).toMatchObject({
      object: 'list',
      data: [{ id: 'Qwen/Qwen3-8B', object: 'model' }],
    });
    const res = await fetch(`${sim.url}/metrics`);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    const label = '{model_name="Qwen/Qwen3-8B",engine="0"}';
    for (const name of [
      'vllm:num_requests_running',
      'vllm:num_requests_waiting',
      'vllm:kv_cache_usage_perc',
      'vllm:gpu_cache_usage_perc',
      'vllm:prefix_cache_queries_total',
      'vllm:prefix_cache_hits_total',
      'vllm:prompt_tokens_total',
      'vllm:generation_tokens_total',
    ]) {
      expect(text).toContain(`# TYPE ${name} `);
      expect(text).toMatch(new RegExp(`^${name}${label.replace(/[{}]/g, '\\$&')} \\d`, 'm'));
    }
    expect(text).toContain(`vllm:generation_tokens_total${label} ${sim.stats().generatedTokens}`);
    expect(text).toContain('finished_reason="stop"} 1');
  });

  it('aborts a streaming request when the client disconnects', async () => {
    const long = { thought: 'word '.repeat(3000), tool: null, content: 'never reached' };
    // Real-time steps (6 ms each at timeScale 1) make the 3000-token answer take many seconds.
    const sim = await start({
      timeScale: 1,
      script: { tasks: [{ taskId: 'long', match: 'long', solve: [long] }], wanderProbability: 0 },
    });
    const controller = new AbortController();
    const res = await fetch(`${sim.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        prompt: firstPrompt(tk, 'a long one'),
        max_tokens: 5000,
        stream: true,
      }),
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    await reader.read(); // the first chunk arrived: the request is running
    expect(sim.stats().running).toBe(1);
    expect(sim.stats().kvUsedTokens).toBeGreaterThan(0);
    controller.abort();
    await vi.waitFor(() => expect(sim.stats().requestsAborted).toBe(1), {
      timeout: 10_000,
      interval: 20,
    });
    const stats = sim.stats();
    expect(stats).toMatchObject({ running: 0, waiting: 0, requestsFinished: 0, kvUsedTokens: 0 });
    expect(stats.generatedTokens).toBeLessThan(3000);
    const steps = stats.steps;
    await new Promise((r) => setTimeout(r, 50));
    // Idle: no more steps run once the only request is gone.
    expect(sim.stats().steps).toBe(steps);
    const metrics = await (await fetch(`${sim.url}/metrics`)).text();
    expect(metrics).toContain('finished_reason="abort"} 1');
  });

  it('aborts a non-streaming request when the client disconnects', async () => {
    const long = { thought: 'word '.repeat(3000), tool: null };
    const sim = await start({
      timeScale: 1,
      script: { tasks: [{ taskId: 'long', match: 'long', solve: [long] }], wanderProbability: 0 },
    });
    const controller = new AbortController();
    const pending = fetch(`${sim.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: firstPrompt(tk, 'a long one'), max_tokens: 5000 }),
      signal: controller.signal,
    }).catch((err: Error) => err);
    await vi.waitFor(() => expect(sim.stats().generatedTokens).toBeGreaterThan(0), {
      timeout: 10_000,
      interval: 10,
    });
    controller.abort();
    expect(await pending).toBeInstanceOf(Error);
    await vi.waitFor(
      () => expect(sim.stats()).toMatchObject({ requestsAborted: 1, running: 0, kvUsedTokens: 0 }),
      {
        timeout: 10_000,
        interval: 20,
      },
    );
  });
});
