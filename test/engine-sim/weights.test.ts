import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { SyncTokenizer } from '../../gateway/codec/tokenizer.js';
import type { EngineSim } from '../../engine-sim/index.js';
import { firstPrompt, post, readSse, useEngineSims } from './helpers.js';

const { tokenizer, start } = useEngineSims(11);
let tk: SyncTokenizer;
beforeAll(() => {
  tk = tokenizer();
});

/** A 3000-token answer: at real-time steps it runs for many seconds. */
const LONG = {
  tasks: [{ taskId: 'long', match: 'long', solve: [{ thought: 'word '.repeat(3000), tool: null }] }],
  wanderProbability: 0,
};

interface SglangChunk {
  output_ids: number[];
  meta_info: { finish_reason: { type: string } | null; weight_version: string; completion_tokens: number };
}

async function call(url: string, path: string, body?: unknown, method = 'POST'): Promise<{ status: number; json: any }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

function generate(url: string, body: object): Promise<Response> {
  return fetch(`${url}/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

/** Waits until the engine has produced tokens for a request. */
async function producing(sim: EngineSim): Promise<void> {
  await vi.waitFor(() => expect(sim.stats().generatedTokens).toBeGreaterThan(0), { timeout: 10_000, interval: 5 });
}

describe('engine-sim weight updates, SGLang routes', () => {
  it('pause_generation(abort) ends streams with finish_reason abort; new requests wait for continue and run on the new version', async () => {
    const sim = await start({ timeScale: 1, script: LONG });
    expect((await call(sim.url, '/get_weight_version', undefined, 'GET')).json).toEqual({ weight_version: 'default' });
    const long = generate(sim.url, { input_ids: firstPrompt(tk, 'long'), sampling_params: { max_new_tokens: 5000 }, return_logprob: true, stream: true });
    await producing(sim);
    expect((await call(sim.url, '/pause_generation', { mode: 'abort' })).json).toMatchObject({ status: 'ok' });
    const events = await readSse(await long);
    expect(events.at(-1)).toBe('[DONE]');
    const last = events.at(-2) as SglangChunk;
    expect(last.meta_info.finish_reason).toMatchObject({ type: 'abort' });
    expect(last.meta_info.weight_version).toBe('default');
    expect(last.output_ids.length).toBeLessThan(3000);

    // Held while paused: it runs only after continue_generation, on the weights loaded meanwhile.
    const held = generate(sim.url, { input_ids: firstPrompt(tk, 'short one'), sampling_params: { max_new_tokens: 4 } });
    await vi.waitFor(() => expect(sim.stats().requestsReceived).toBe(2), { timeout: 10_000, interval: 5 });
    expect(sim.stats()).toMatchObject({ paused: true, running: 0, waiting: 0 });
    const update = await call(sim.url, '/update_weights_from_disk', { model_path: '/ckpt/step-1', weight_version: '1' });
    expect(update).toMatchObject({ status: 200, json: { success: true } });
    expect((await call(sim.url, '/continue_generation', {})).json).toMatchObject({ status: 'ok' });
    const answer = (await (await held).json()) as SglangChunk;
    expect(answer.meta_info.weight_version).toBe('1');
    expect(answer.output_ids).toHaveLength(4);
    expect(sim.stats()).toMatchObject({ paused: false, weightVersion: '1', requestsAborted: 1 });
  });

  it('counts the version up on an update that names none, and sets a named one with update_weight_version', async () => {
    const sim = await start({ weightVersion: '7' });
    await call(sim.url, '/update_weights_from_disk', { model_path: '/ckpt' });
    expect((await call(sim.url, '/get_weight_version', undefined, 'GET')).json).toEqual({ weight_version: '8' });
    expect((await call(sim.url, '/update_weight_version', { new_version: 'step-9' })).json).toMatchObject({ new_version: 'step-9' });
    await call(sim.url, '/update_weights_from_disk', { model_path: '/ckpt' });
    // Not a number: counting starts again at 1.
    expect(sim.stats().weightVersion).toBe('1');
    expect((await call(sim.url, '/pause_generation', { mode: 'sideways' })).status).toBe(400);
  });
});

describe('engine-sim weight updates, vLLM routes', () => {
  it('pause?mode=abort ends streams with finish_reason abort; is_paused, update_weights and resume; x-weight-version names the version', async () => {
    const sim = await start({ timeScale: 1, script: LONG });
    const long = post(sim.url, { prompt: firstPrompt(tk, 'long'), max_tokens: 5000, stream: true, return_token_ids: true, stream_options: { include_usage: true } });
    await producing(sim);
    expect((await call(sim.url, '/pause?mode=abort')).json).toEqual({ status: 'paused' });
    const res = await long;
    expect(res.headers.get('x-weight-version')).toBe('default');
    const events = (await readSse(res)) as any[];
    expect(events.at(-1)).toBe('[DONE]');
    const finishes = events.flatMap((e) => (e === '[DONE]' ? [] : e.choices.map((c: any) => c.finish_reason)));
    expect(finishes.filter(Boolean)).toEqual(['abort']);
    const sampled = events.flatMap((e) => (e === '[DONE]' ? [] : e.choices.flatMap((c: any) => c.token_ids ?? [])));
    expect(events.at(-2).usage.completion_tokens).toBe(sampled.length);

    expect((await call(sim.url, '/is_paused', undefined, 'GET')).json).toEqual({ is_paused: true });
    const held = post(sim.url, { prompt: firstPrompt(tk, 'short one'), max_tokens: 3 });
    expect((await call(sim.url, '/update_weights', { update_info: { names: ['w'] } })).json).toEqual({ message: 'Weights updated' });
    expect((await call(sim.url, '/update_weights', {})).status).toBe(400);
    expect((await call(sim.url, '/resume')).json).toEqual({ status: 'resumed' });
    const answer = await held;
    expect(answer.headers.get('x-weight-version')).toBe('1');
    expect(((await answer.json()) as any).usage.completion_tokens).toBe(3);
    expect((await call(sim.url, '/is_paused', undefined, 'GET')).json).toEqual({ is_paused: false });
  });

  it('pause?mode=wait answers once the requests under way finished', async () => {
    const sim = await start({ timeScale: 0.05, script: LONG });
    const under = post(sim.url, { prompt: firstPrompt(tk, 'long'), max_tokens: 300 });
    await producing(sim);
    const paused = await call(sim.url, '/pause?mode=wait');
    expect(paused.json).toEqual({ status: 'paused' });
    expect(sim.stats()).toMatchObject({ running: 0, requestsFinished: 1, requestsAborted: 0 });
    expect(((await (await under).json()) as any).choices[0].finish_reason).toBe('length');
    expect((await call(sim.url, '/pause?mode=later')).status).toBe(400);
  });
});
