import type { FastifyInstance } from 'fastify';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { consistencyFigures, type ConsistencyFigures, type RecordedTrajectory, type TrainerLogprobs } from '../../api/logprob-report.js';
import { readSseData } from '../../gateway/backends/sse.js';
import { SAMPLING_DEFAULTS } from '../../gateway/sampling-schema.js';
import { readEngineMetrics } from '../../scheduler/metrics-scraper.js';
import { createRouter, type Router } from '../../scheduler/router.js';
import { discoverKvEventSource } from '../../scheduler/kv-events/discovery.js';
import { blockHashes } from '../../scheduler/routing/block-hash.js';
import { freePort } from '../../stack/ports.js';
import type { Store, StoredTurn } from '../../trajectory/index.js';
import { openTestSession, sessionInfo, startTestGateway, tempStore, TEST_ADMIN_TOKEN } from '../helpers/gateway.js';
import { buildTinyQwen3, recomputeLogprobs, startRealVllm, type RealVllm } from '../helpers/real-vllm.js';
import { startRecordingProxy, type RecordedCompletion } from '../helpers/recording-proxy.js';

/**
 * The gateway against a real vLLM (the CPU build from scripts/install-vllm.sh) serving a tiny
 * random-weight Qwen3 built here: one engine for the whole file, as it takes minutes to start.
 * The engine reports processed log-probs, so at T != 1 they are log_softmax(logits / T), what a
 * trainer recomputes. Two instances name the same engine: `recorded` behind a recording proxy (it
 * answers once the engine is done) and `direct`, whose streams a client disconnect reaches. The
 * engine publishes its KV-cache events; the router subscribes for `direct` at the address the
 * engine reports (`GET /kv_event_sources`).
 */

/** The engine runs with processed log-probs; sessions say so, and it is recorded per turn. */
const SAMPLING = { ...SAMPLING_DEFAULTS, logprobsMode: 'processed' as const };

/** Building the model and starting vLLM: minutes on a busy CPU. */
const ENGINE_START_MS = 900_000;
/** A test: some run transformers once or twice (each start takes tens of seconds). */
const TEST_MS = 300_000;
const RECORDED = 'recorded';
const DIRECT = 'direct';
const IM_END = 151645;

let modelDir: string;
let vllm: RealVllm | undefined;
let proxy: Awaited<ReturnType<typeof startRecordingProxy>> | undefined;
let store: Store;
let router: Router;
let gateway: FastifyInstance | undefined;
let url: string;

beforeAll(async () => {
  modelDir = await buildTinyQwen3();
  // A long context, so the answers cut by a disconnect or a pause are long enough that the engine
  // is still generating when the cut reaches it, however fast it samples (see LONG_ANSWER_TOKENS).
  // The engine niced: the gateway, router and client in this process, and vLLM's API server, get
  // a CPU while it generates.
  vllm = await startRealVllm({ modelDir, processedLogprobs: true, maxModelLen: 8192, engineNiceness: 10, pinEngineCore: true, kvEvents: { port: await freePort(), replayPort: await freePort() } });
  proxy = await startRecordingProxy(vllm.url);
  store = tempStore('vllm-real-');
  const engines = [
    { name: RECORDED, kind: 'vllm' as const, url: proxy.url },
    { name: DIRECT, kind: 'vllm' as const, url: vllm.url, kvEvents: await discoverKvEventSource(vllm.url, 5_000) },
  ];
  // Probes get 10 s: while vLLM generates it keeps both cores of a 2-core machine busy, and this
  // process (gateway, router and test) can wait seconds for a CPU (3.6 s measured), past the
  // default 1 s, so every scrape would time out and the router keep its metrics from before.
  router = createRouter(engines, { policy: 'home', metricsIntervalMs: 100, healthIntervalMs: 1_000, probeTimeoutMs: 10_000 });
  ({ gateway, url } = await startTestGateway(store, engines, router));
}, ENGINE_START_MS);

afterAll(async () => {
  await gateway?.close();
  await proxy?.close();
  await vllm?.close();
  store?.close();
  if (modelDir) rmSync(modelDir, { recursive: true, force: true });
}, 60_000);

function chat(key: string, body: object, signal?: AbortSignal): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
    signal,
  });
}

/** A streaming chat read as it comes: `chunks` grows while the engine generates. */
function streamChat(key: string, content: string, signal?: AbortSignal) {
  const chunks: any[] = [];
  const done = chat(key, { messages: [{ role: 'user', content }], stream: true }, signal).then(async (r) => {
    expect(r.status).toBe(200);
    for await (const data of readSseData(r.body!)) {
      if (data === '[DONE]') continue;
      const chunk = JSON.parse(data);
      // An error event ends the stream: the test fails with the gateway's reason.
      if (chunk.error) throw new Error(`the stream ended with an error: ${JSON.stringify(chunk.error)}`);
      chunks.push(chunk);
    }
  });
  return { chunks, done, finishReason: () => chunks.map((c) => c.choices[0]?.finish_reason).find(Boolean) };
}

async function admin(path: string, body: unknown): Promise<{ status: number; json: any }> {
  const r = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, json: await r.json() };
}

/** vLLM's own metrics, read now (not the router's last scrape). */
async function engineMetrics(): Promise<{ running: number; samples: string }> {
  const text = await (await fetch(`${vllm!.url}/metrics`)).text();
  return { running: readEngineMetrics('vllm', text, Date.now())!.running, samples: text };
}

/** A counter's value in vLLM's metrics text (one engine: one sample). */
function counter(samples: string, name: string): number {
  const line = samples.split('\n').find((l) => l.startsWith(`${name}{`));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

/** One turn's whole token sequence (its session's first turn: the prompt delta is the whole prompt). */
function sequenceOf(turn: StoredTurn): number[] {
  return [...turn.promptDelta, ...turn.sampled];
}

/**
 * The verl-style figures of stored turns against log-probs transformers recomputes at each of
 * `temperatures` (one python run, it takes a while to start), and the sampled tokens' logit ranks.
 */
async function consistencyOf(turns: StoredTurn[], temperatures: number[]) {
  const recomputed = await recomputeLogprobs(
    modelDir,
    temperatures.flatMap((temperature) => turns.map((t) => ({ ids: sequenceOf(t), start: t.promptDelta.length, temperature }))),
  );
  const recorded = new Map<string, RecordedTrajectory>();
  turns.forEach((turn) => {
    const id = `${turn.sessionId}.${turn.seq}`;
    recorded.set(id, {
      trajectoryId: id,
      promptLength: turn.promptDelta.length,
      sampledMask: sequenceOf(turn).map((_, j) => (j < turn.promptDelta.length ? 0 : 1)),
      logprobs: [...turn.promptDelta.map(() => 0), ...turn.logprobs],
      turnStarts: [0],
      turnTemperature: [turn.temperature],
      turnLogprobsMode: [turn.logprobsMode],
    });
  });
  const figures = temperatures.map((_, k) => {
    const given: TrainerLogprobs[] = turns.map((turn, i) => ({
      trajectory_id: `${turn.sessionId}.${turn.seq}`,
      logprobs: recomputed.logprobs[k * turns.length + i]!,
      layout: 'response',
    }));
    // Compared at what the turns recorded (one temperature per call), whatever the recompute's.
    return consistencyFigures(recorded, given, 1);
  });
  return { figures, ranks: recomputed.ranks.slice(0, turns.length).flat() };
}

/** Opens a session on `instance` at `temperature` and has one chat turn of up to `maxTokens`. */
async function oneTurn(sessionId: string, instance: string, temperature: number, maxTokens: number, content: string): Promise<StoredTurn> {
  const key = await openTestSession(url, sessionId, sessionInfo({ homeInstance: instance, sampling: { ...SAMPLING, temperature, maxTokens } }));
  const r = await chat(key, { messages: [{ role: 'user', content }] });
  expect(r.status).toBe(200);
  const turns = await store.loadTurns(sessionId);
  expect(turns).toHaveLength(1);
  return turns[0]!;
}

/**
 * An answer the disconnect and pause tests cut: long enough that the engine is still generating
 * when the cut reaches it. About 30 s of sampling for the tiny model on one CPU core.
 */
const LONG_ANSWER_TOKENS = 6000;

/**
 * Characters of the answer the client has before the disconnect and pause tests cut it: about 150
 * tokens, so the engine has sampled a while.
 */
const STREAMED_BEFORE_CUT = 600;

/**
 * Waits until the client has had `chars` characters of the answer (content and reasoning): the
 * engine is generating. A request without tools streams every token as it comes (call text
 * included). Characters, not chunks: a process that waited for a CPU reads many tokens as one chunk.
 */
async function waitForText(stream: { chunks: any[] }, chars: number): Promise<void> {
  const streamed = () => stream.chunks.reduce((n: number, c) => n + (c.choices[0]?.delta?.content?.length ?? 0) + (c.choices[0]?.delta?.reasoning_content?.length ?? 0), 0);
  await vi.waitFor(() => expect(streamed()).toBeGreaterThanOrEqual(chars), { timeout: 60_000, interval: 20 });
}

describe('the gateway over a real vLLM', { timeout: TEST_MS }, () => {
  it("knows from vLLM's own KV events which prefix it holds: the router's count is what vLLM then reports cached", async () => {
    const events = router.kvLookup!.events;
    const sessionId = 's-kv-events';
    const key = await openTestSession(url, sessionId, sessionInfo({ homeInstance: DIRECT, sampling: { ...SAMPLING, maxTokens: 24 } }));
    const history: object[] = [{ role: 'user', content: `Read this log:\n${Array.from({ length: 60 }, (_, i) => `line ${i}: widget ${i * 7} ok`).join('\n')}` }];
    const first = await chat(key, { messages: history });
    expect(first.status).toBe(200);
    history.push((await first.json()).choices[0].message, { role: 'user', content: 'And the next widget?' });
    const [turn1] = await store.loadTurns(sessionId);
    const sequence = sequenceOf(turn1!);
    // vLLM stores the full blocks of what it computed: the prompt and every sampled token but the last.
    const blockSize = Number(/vllm:cache_config_info\{[^}]*block_size="(\d+)"/.exec((await engineMetrics()).samples)![1]);
    const stored = Math.floor((sequence.length - 1) / blockSize) * blockSize;
    expect(stored).toBeGreaterThanOrEqual(2 * blockSize);
    const hashes = blockHashes(sequence, 64);
    await vi.waitFor(() => expect(events.matchedBlocks(DIRECT, hashes) * 64).toBe(stored), { timeout: 10_000, interval: 100 });
    expect(events.isLive(DIRECT, Date.now())).toBe(true);
    expect(events.stats(DIRECT)).toMatchObject({ synced: true, buffered: 0 });

    const second = await chat(key, { messages: history });
    expect(second.status).toBe(200);
    const turn2 = (await store.loadTurns(sessionId))[1]!;
    // The second prompt extends the first turn's sequence: vLLM serves the blocks the router counted.
    expect(turn2.cachedTokens).toBe(stored);
  });

  it('aborts the engine request when the client disconnects, as the router sees in the scraped metrics', async () => {
    const maxTokens = LONG_ANSWER_TOKENS;
    const key = await openTestSession(url, 's-disconnect', sessionInfo({ homeInstance: DIRECT, sampling: { ...SAMPLING, maxTokens } }));
    const generatedBefore = counter((await engineMetrics()).samples, 'vllm:generation_tokens_total');
    const client = new AbortController();
    const stream = streamChat(key, 'Write a long essay.', client.signal);
    await waitForText(stream, STREAMED_BEFORE_CUT);
    // The router's own scrape of vLLM's /metrics sees the request running (scraped now rather than
    // on its timer, which a starved process runs late).
    const routerView = async () => {
      await router.registry.refresh();
      return { healthy: router.registry.isHealthy(DIRECT), running: router.registry.metrics(DIRECT)?.running };
    };
    await vi.waitFor(async () => expect(await routerView()).toEqual({ healthy: true, running: 1 }), { timeout: 20_000, interval: 20 });
    expect(router.registry.metrics(DIRECT)!.kvUsage).toBeGreaterThan(0);
    expect(router.registry.metrics(DIRECT)!.prefixHitRate).toBeGreaterThanOrEqual(0);
    client.abort();
    await stream.done.catch(() => undefined);
    await vi.waitFor(async () => expect((await engineMetrics()).running).toBe(0), { timeout: 60_000, interval: 50 });
    // It ended short of its length: vLLM aborted it (its counters do not count a client's abort).
    const generated = counter((await engineMetrics()).samples, 'vllm:generation_tokens_total') - generatedBefore;
    expect(generated).toBeGreaterThan(5);
    expect(generated).toBeLessThan(maxTokens);
    await vi.waitFor(async () => expect(await routerView()).toEqual({ healthy: true, running: 0 }), { timeout: 20_000, interval: 20 });
  });

  it('pauses with abort and continues the same answer from its tokens after the resume', async () => {
    const maxTokens = LONG_ANSWER_TOKENS;
    const key = await openTestSession(url, 's-pause', sessionInfo({ homeInstance: DIRECT, sampling: { ...SAMPLING, maxTokens } }));
    const stream = streamChat(key, 'Write another essay.');
    await waitForText(stream, STREAMED_BEFORE_CUT);
    const { version: from } = (await (await fetch(`${url}/admin/v1/policy`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } })).json()) as { version: number };
    const pause = await admin('/admin/v1/policy/pause', { mode: 'abort' });
    expect(pause).toEqual({ status: 200, json: { version: from, paused: true, finished: 0, aborted: 1 } });
    await vi.waitFor(async () => expect((await engineMetrics()).running).toBe(0), { timeout: 30_000, interval: 50 });
    const seenAtPause = stream.chunks.length;
    expect(await admin('/admin/v1/policy/resume', { version: from + 1 })).toEqual({ status: 200, json: { version: from + 1, paused: false } });
    await stream.done;
    expect(stream.chunks.length).toBeGreaterThan(seenAtPause);
    expect(stream.finishReason()).toBe('length');

    const [turn] = await store.loadTurns('s-pause');
    expect(turn!.finishReason).toBe('abort_resumed');
    expect(turn!.sampled).toHaveLength(maxTokens);
    const cut = turn!.sampledVersions.indexOf(from + 1);
    expect(cut).toBeGreaterThan(0);
    expect(turn!.sampledVersions).toEqual([...Array(cut).fill(from), ...Array(maxTokens - cut).fill(from + 1)]);
    // The continuation was sampled given prompt + partial answer: the log-probs the engine
    // reported after the cut are those of that context.
    const { figures } = await consistencyOf([turn!], [1]);
    expect(figures[0]!.max_abs_prob_diff).toBeLessThan(1e-4);
  });

  it('stores the token ids and log-probs vLLM streamed, bit for bit, sampled with our parameters and not the model folder top_k', async () => {
    const before = proxy!.recorded.length;
    const turn = await oneTurn('s-exact', RECORDED, 1, 96, 'Tell me about the widget.');
    const completions: RecordedCompletion[] = proxy!.recorded.slice(before);
    expect(completions).toHaveLength(1);
    const [completion] = completions as [RecordedCompletion];
    expect(completion.request).toMatchObject({ temperature: 1, top_p: 1, top_k: -1, max_tokens: 96 });
    expect(completion.promptIds).toEqual(turn.promptDelta);
    expect(turn.sampled).toEqual(completion.tokenIds);
    // vLLM's log-probs are float32 values; the store keeps float32: equal bit for bit.
    expect(completion.logprobs.map((l) => Math.fround(l))).toEqual(completion.logprobs);
    expect(Array.from(turn.logprobs)).toEqual(completion.logprobs);
    expect(turn.sampled.length).toBeGreaterThan(10);

    // generation_config.json says top_k 20: had vLLM applied it, every sampled token would be
    // among the 20 largest logits, and its processed log-prob renormalised over them.
    const { figures, ranks } = await consistencyOf([turn], [1]);
    expect(Math.max(...ranks)).toBeGreaterThanOrEqual(20);
    expect(figures[0]!.max_abs_prob_diff).toBeLessThan(1e-4);
  });

  it.each([1, 0.7])('reports a log-prob consistency of 1 against transformers at T=%s', async (temperature) => {
    const turns: StoredTurn[] = [];
    for (let i = 0; i < 4; i++) turns.push(await oneTurn(`s-consistency-${temperature}-${i}`, RECORDED, temperature, 64, `Question ${i}: how is the widget?`));
    // Also against T=1: at T=0.7 the engine's log-probs are the tempered ones, which differ.
    for (const t of turns) expect({ temperature: t.temperature, logprobsMode: t.logprobsMode }).toEqual({ temperature, logprobsMode: 'processed' });
    const { figures } = await consistencyOf(turns, temperature === 1 ? [1] : [temperature, 1]);
    const [atT, atOne] = figures as [ConsistencyFigures, ConsistencyFigures | undefined];
    console.log(`log-prob consistency at T=${temperature}: ${JSON.stringify({ ...atT, worst: undefined })}`);
    expect(atT.tokens).toBe(turns.reduce((n, t) => n + t.sampled.length, 0));
    expect(atT.pearson).toBeGreaterThan(0.9999);
    expect(atT.mean_abs_prob_diff).toBeLessThan(1e-5);
    expect(atT.max_abs_prob_diff).toBeLessThan(1e-4);
    if (atOne) expect(atOne.max_abs_prob_diff).toBeGreaterThan(1e-3);
  });

  it('answers an empty message when the first token vLLM samples is <|im_end|>', async () => {
    const key = await openTestSession(url, 's-empty', sessionInfo({ homeInstance: RECORDED, sampling: { ...SAMPLING, maxTokens: 64 } }));
    const before = proxy!.recorded.length;
    // The tiny model's hand-wired circuit (tiny-qwen3.py): "Quiet" in the context ends the answer at once.
    const r = await chat(key, { messages: [{ role: 'user', content: 'Quiet' }] });
    expect(r.status).toBe(200);
    const answer = (await r.json()) as any;
    expect(answer.choices[0]).toMatchObject({ message: { content: '' }, finish_reason: 'stop' });
    const [completion] = proxy!.recorded.slice(before);
    expect(completion!.tokenIds).toEqual([IM_END]);
    const [turn] = await store.loadTurns('s-empty');
    expect(turn!.sampled).toEqual([IM_END]);
    expect(Array.from(turn!.logprobs)).toEqual(completion!.logprobs);
  });

  it('passes a request vLLM rejects inside its 200 stream to the client with its status, and keeps the engine in', async () => {
    const key = await openTestSession(url, 's-rejected', sessionInfo({ homeInstance: RECORDED, sampling: { ...SAMPLING, maxTokens: 16 } }));
    // More sample log-probs than vLLM allows (20): it checks that after the stream began.
    proxy!.rewriteNext((body) => ({ ...body, logprobs: 50 }));
    const before = proxy!.recorded.length;
    const rejected = await chat(key, { messages: [{ role: 'user', content: 'Reject this.' }] });
    const [completion] = proxy!.recorded.slice(before);
    expect(completion!.chunks).toEqual([{ error: expect.objectContaining({ code: 400, param: 'logprobs' }) }]);
    expect(rejected.status).toBe(400);
    expect(((await rejected.json()) as any).error.message).toContain('greater than max allowed: 20');
    expect(router.registry.isHealthy(RECORDED)).toBe(true);
    const again = await chat(key, { messages: [{ role: 'user', content: 'Now answer.' }] });
    expect(again.status).toBe(200);
    expect(await store.loadTurns('s-rejected')).toHaveLength(1);
  });

});
