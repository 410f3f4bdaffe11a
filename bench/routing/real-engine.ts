/**
 * The simulator checked against real engines (issue 17): two vLLM CPU instances serving the tiny
 * Qwen3 of the real-engine tests, one small closed-loop agent batch run through the gateway under
 * each policy, and the same episodes (the token ids the engines saw) in the simulator calibrated
 * to those instances; printed: per-policy prefix hit rates on both sides and their rankings.
 *
 * Each policy runs `BENCH_REAL_ROUNDS` times (default 3, interleaved): one run's engine hit rate
 * moves by several points with the engines' timing on a shared machine, more than some policies
 * differ, so a single run's ranking is partly noise. Policies are compared on their means, and two
 * are told apart only by more than twice the standard error of the difference of their engine
 * means (at least `TIE_BAND` points).
 *
 * Between policies the engines' prefix caches are emptied (`POST /reset_prefix_cache`, served with
 * VLLM_SERVER_DEV_MODE=1) rather than each run's prompts made distinct by a nonce: every run then
 * starts from an empty cache, as the simulator does, and its prompts are exactly the workload's
 * (a nonce would add tokens and leave the earlier runs' blocks competing for the LRU's room).
 */
import { existsSync, rmSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { SAMPLING_DEFAULTS } from '../../gateway/sampling-schema.js';
import { createRouter } from '../../scheduler/router.js';
import { KV_GATE_DEFAULTS } from '../../scheduler/routing/kv-gate.js';
import { createPolicy, type PolicyName } from '../../scheduler/routing/policies/index.js';
import { agentBatch, simulate, type ModelPreset, type Workload } from '../../scheduler/simulator/index.js';
import { closeTestSession, openTestSession, sessionInfo, startTestGateway, tempStore } from '../../test/helpers/gateway.js';
import { buildTinyQwen3, SERVED_MODEL, startRealVllm, VLLM_PYTHON, type RealVllm } from '../../test/helpers/real-vllm.js';
import { agreement, fitLine, inversions, meanAndSd, ranksWithTies, separatedOnlyBy, spreadBand } from './figures.js';
import { materialise, simulatorWorkload, type RecordedEpisode, type ScriptedEpisode } from './real-engine-workload.js';
import { table } from './table.js';
import { counterDelta, readCacheConfig, readCounters, sumCounters, type VllmCacheConfig, type VllmCounters } from './vllm-metrics.js';

/**
 * Engine settings: 80 blocks of 128 tokens (10k tokens) per instance, so the batch's ~30k-token
 * working set does not fit the two and eviction and placement matter; 4k-token contexts.
 */
const ENGINE = { numGpuBlocks: 80, maxNumSeqs: 16, maxNumBatchedTokens: 4096, maxModelLen: 4096 };
/** Hit-rate differences (percentage points) within which two policies always count as tied. */
const TIE_BAND = 2;
/** Runs of every policy: one run's hit rates move by several points with the engines' timing (BENCH_REAL_ROUNDS). */
const ROUNDS = Number(process.env.BENCH_REAL_ROUNDS ?? 3);
/** The issue's target: the simulator within this many points of the engines, per policy. */
const TARGET_POINTS = 10;

interface Variant {
  label: string;
  policy: PolicyName;
  /** Behind the router's admission (as `ours` ships); the baselines route every call at once. */
  gated: boolean;
}

/** Cache-blind (round robin, least requests), sticky and prefix-aware baselines, and ours as shipped. */
const VARIANTS: Variant[] = [
  ...(['round-robin', 'least-requests', 'verl-sticky', 'sglang-cache-aware', 'uni-agent-kv-aware', 'skyrl-sticky-least-loaded'] as const).map((policy) => ({ label: policy, policy, gated: false })),
  { label: 'ours + admission', policy: 'ours', gated: true },
];

const ChatAnswer = z.object({
  choices: z.array(z.object({ message: z.object({ role: z.literal('assistant') }).passthrough() })).length(1),
  usage: z.object({ prompt_tokens: z.number().int().nonnegative(), completion_tokens: z.number().int().nonnegative(), prompt_tokens_details: z.object({ cached_tokens: z.number().int().nonnegative() }) }),
});
type Usage = z.infer<typeof ChatAnswer>['usage'];

const sleep = (s: number) => new Promise((r) => setTimeout(r, s * 1000));

async function metricsText(engine: RealVllm): Promise<string> {
  const r = await fetch(`${engine.url}/metrics`);
  if (!r.ok) throw new Error(`${engine.url}/metrics answered ${r.status}`);
  return r.text();
}

async function resetPrefixCache(engine: RealVllm): Promise<void> {
  const r = await fetch(`${engine.url}/reset_prefix_cache`, { method: 'POST' });
  if (!r.ok) throw new Error(`${engine.url}/reset_prefix_cache answered ${r.status}: ${await r.text()}`);
}

/** One direct completion of token ids (no gateway), `maxTokens` long whatever it samples; seconds. */
async function timedCompletion(engine: RealVllm, prompt: number[], maxTokens: number): Promise<number> {
  const start = performance.now();
  const r = await fetch(`${engine.url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: SERVED_MODEL, prompt, max_tokens: maxTokens, ignore_eos: true }),
  });
  if (!r.ok) throw new Error(`calibration completion answered ${r.status}: ${await r.text()}`);
  await r.json();
  return (performance.now() - start) / 1000;
}

const CALIBRATION = { prefillLengths: [256, 1024, 2048, 3072], decode: 65, context: 1024, batches: [1, 2, 4, 8] };
/** Decode-step tries per batch size: the faster of `valid` positive ones, at most `max` in all. */
const STEP_TRIES = { valid: 2, max: 6 };

/**
 * One instance's timings: a one-token answer on fresh prompts of each length (prefill only), and
 * one decode step of `n` concurrent sequences (`n` 65-token answers less `n` one-token ones on
 * the same cached prompts). Each point is the faster of two tries, the machine being shared (a
 * decode step the faster of two positive ones, see STEP_TRIES).
 */
async function measure(engine: RealVllm): Promise<{ prefill: number[]; steps: number[] }> {
  let nonce = 0;
  const fresh = (n: number): number[] => {
    nonce++;
    return Array.from({ length: n }, (_, i) => 1000 + ((nonce * 7919 + i * 31) % 50_000));
  };
  const { prefillLengths, decode, context, batches } = CALIBRATION;
  // A first request of a shape is slow (warm-up), sometimes by 10x: one of each is sent and not timed.
  for (const n of prefillLengths) await timedCompletion(engine, fresh(n), 1);
  const prefill: number[] = [];
  for (const n of prefillLengths) prefill.push(Math.min(await timedCompletion(engine, fresh(n), 1), await timedCompletion(engine, fresh(n), 1)));
  const steps: number[] = [];
  for (const n of batches) {
    const prompts = Array.from({ length: n }, () => fresh(context));
    const all = (maxTokens: number) => Promise.all(prompts.map((p) => timedCompletion(engine, p, maxTokens))).then((t) => Math.max(...t));
    await all(1);
    // A try whose one-token pass was slowed by the machine comes out negative: it measures nothing
    // and is tried again (a minimum over the tries would pick it).
    const tries: number[] = [];
    for (let i = 0; i < STEP_TRIES.max && tries.length < STEP_TRIES.valid; i++) {
      const step = ((await all(decode)) - (await all(1))) / (decode - 1);
      if (step > 0) tries.push(step);
    }
    if (tries.length === 0) throw new Error(`calibration: no positive decode step time for ${n} sequences in ${STEP_TRIES.max} tries`);
    steps.push(Math.min(...tries));
  }
  return { prefill, steps };
}

/**
 * The step-cost constants, from both instances measured at once (so each runs beside the other,
 * as in the runs): `a` is the slope of the prefill times over the prompt length; `c0` and `b` the
 * line through the decode step times over the batch's context. The tiny model's attention is
 * cheap: what grows with the batch is each sequence's sampling over the vocabulary, which the
 * model's `b·context` term has to carry.
 */
async function calibrate(engines: RealVllm[], capacityTokens: number): Promise<{ preset: ModelPreset; points: string }> {
  const { prefillLengths, decode, context, batches } = CALIBRATION;
  const measured = await Promise.all(engines.map(measure));
  // The instances are alike (same model, settings and share of the CPU): each point is the faster
  // one's, so one point the machine slowed (a 2k-token prefill once took 400 ms against 40) does
  // not tilt the fit.
  const fastest = (pick: (m: (typeof measured)[number]) => number[]) => pick(measured[0]!).map((_, i) => Math.min(...measured.map((m) => pick(m)[i]!)));
  const prefill = fastest((m) => m.prefill);
  const steps = fastest((m) => m.steps);
  const a = fitLine(prefillLengths, prefill).slope;
  const { intercept: c0, slope: b } = fitLine(
    batches.map((n) => n * (context + decode / 2)),
    steps,
  );
  if (a <= 0 || c0 <= 0 || b < 0) throw new Error(`calibration gave a step cost that is not one: c0 ${c0}, a ${a}, b ${b} (${JSON.stringify(measured)})`);
  const ms = (xs: number[]) => xs.map((x) => (1000 * x).toFixed(1)).join('/');
  const points = `faster instance: prefill of ${prefillLengths.join('/')} tokens ${ms(prefill)} ms; decode step of ${batches.join('/')} × ${context}-token sequences ${ms(steps)} ms`;
  return { preset: { name: 'tiny Qwen3 on vLLM CPU (fitted)', c0, a, b, kvCapacityTokens: capacityTokens }, points };
}

/** One run of a policy on the engines, and the simulator on the same episodes. */
interface PolicyRun {
  engine: number;
  usageRate: number;
  sim: number;
  run: EngineRun;
  simMakespan: number;
}

interface EngineRun {
  recorded: RecordedEpisode[];
  calls: number;
  usage: { prompt: number; cached: number };
  counters: VllmCounters;
  wallS: number;
}

/** One episode through the gateway: a session, each turn a chat completion, the tool gap slept between. */
async function playEpisode(url: string, sessionId: string, ep: ScriptedEpisode): Promise<{ usages: Usage[]; gaps: number[] }> {
  const key = await openTestSession(url, sessionId, sessionInfo({ maxTurns: ep.maxTokens.length, sampling: { ...SAMPLING_DEFAULTS, maxTokens: Math.max(...ep.maxTokens) } }));
  const messages: unknown[] = [{ role: 'user', content: ep.taskText }];
  const usages: Usage[] = [];
  const gaps: number[] = [];
  for (let k = 0; k < ep.maxTokens.length; k++) {
    const r = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ messages, max_tokens: ep.maxTokens[k] }),
    });
    if (r.status !== 200) throw new Error(`episode ${ep.chainId} turn ${k}: the gateway answered ${r.status}: ${await r.text()}`);
    const answer = ChatAnswer.parse(await r.json());
    const answered = performance.now();
    usages.push(answer.usage);
    messages.push(answer.choices[0]!.message);
    if (k === ep.maxTokens.length - 1) break;
    await sleep(ep.delays[k]!);
    messages.push({ role: 'user', content: ep.observations[k]! });
    // The gap the engines saw, client overhead included.
    gaps.push((performance.now() - answered) / 1000);
  }
  await closeTestSession(url, sessionId);
  return { usages, gaps };
}

/** The episodes under one policy through a fresh gateway and router over the engines, from empty caches. */
async function runOnEngines(v: Variant, engines: RealVllm[], cache: VllmCacheConfig, script: ScriptedEpisode[]): Promise<EngineRun> {
  await Promise.all(engines.map(resetPrefixCache));
  const before = await Promise.all(engines.map(async (e) => readCounters(await metricsText(e))));
  const instances = engines.map((e, i) => ({ name: `e${i}`, kind: 'vllm' as const, url: e.url, kvCapacityTokens: cache.numGpuBlocks * cache.blockSize }));
  // The router's blocks are the engines' (the simulator has one block size for both); health
  // probes get 5 s, as the shared 2-core machine can keep a busy engine's /health waiting.
  const router = createRouter(instances, { policy: v.policy, blockSize: cache.blockSize, admission: { enabled: v.gated }, probeTimeoutMs: 5_000 });
  const store = tempStore('bench-real-engine-');
  const { gateway, url } = await startTestGateway(store, instances, router);
  const start = performance.now();
  try {
    const played = await Promise.all(script.map((ep) => playEpisode(url, ep.chainId, ep)));
    const wallS = (performance.now() - start) / 1000;
    const after = await Promise.all(engines.map(async (e) => readCounters(await metricsText(e))));
    const recorded: RecordedEpisode[] = [];
    for (const [e, ep] of script.entries()) {
      const { usages, gaps } = played[e]!;
      const turns = (await store.loadTurns(ep.chainId)).filter((t) => !t.rolledBack).sort((x, y) => x.seq - y.seq);
      if (turns.length !== ep.maxTokens.length || new Set(turns.map((t) => t.chainIndex)).size !== 1) {
        throw new Error(`${v.label}: episode ${ep.chainId} stored ${turns.length} turns in ${new Set(turns.map((t) => t.chainIndex)).size} chains, not ${ep.maxTokens.length} in one`);
      }
      let context: number[] = [];
      const tokenTurns = turns.map((t, k) => {
        const prompt = [...context, ...t.promptDelta];
        context = [...prompt, ...t.sampled];
        if (prompt.length !== usages[k]!.prompt_tokens || t.sampled.length !== usages[k]!.completion_tokens) {
          throw new Error(`${v.label}: episode ${ep.chainId} turn ${k}: the store has ${prompt.length}+${t.sampled.length} tokens, the answer's usage ${usages[k]!.prompt_tokens}+${usages[k]!.completion_tokens}`);
        }
        return { prompt, output: t.sampled };
      });
      recorded.push({ chainId: ep.chainId, turns: tokenTurns, delays: gaps });
    }
    const all = played.flatMap((p) => p.usages);
    return {
      recorded,
      calls: all.length,
      usage: { prompt: all.reduce((s, u) => s + u.prompt_tokens, 0), cached: all.reduce((s, u) => s + u.prompt_tokens_details.cached_tokens, 0) },
      counters: sumCounters(after.map((a, i) => counterDelta(before[i]!, a))),
      wallS,
    };
  } finally {
    await gateway.close();
    await store.close();
  }
}

/** Starts both engines; if either fails, the other is closed before the error is thrown. */
async function startEngines(modelDir: string): Promise<RealVllm[]> {
  // One core each where there are two, as each engine of a deployment has its own accelerator:
  // the engine core pinned with its model worker, or its waiting spin takes the other's core.
  const cores = availableParallelism();
  const started = await Promise.allSettled([0, 1].map((i) => startRealVllm({ modelDir, ...ENGINE, devMode: true, ...(cores >= 2 && { cpus: String(i), pinEngineCore: true }) })));
  const engines = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    await Promise.all(engines.map((e) => e.close()));
    throw failed.reason;
  }
  return engines;
}

const pct = (x: number) => (100 * x).toFixed(1);

export async function runRealEngineComparison(): Promise<void> {
  console.log('\n## Real engines vs the simulator (prefix hit rate per policy)');
  if (!existsSync(VLLM_PYTHON)) {
    console.log(`skipped: vLLM is not installed (${VLLM_PYTHON} is missing): run scripts/install-vllm.sh`);
    return;
  }
  if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error(`BENCH_REAL_ROUNDS must be a whole number of rounds, at least 1 (got ${process.env.BENCH_REAL_ROUNDS})`);
  const wall = performance.now();
  const seed = Number(process.env.BENCH_REAL_SEED ?? 1);
  const batch: Workload = agentBatch({
    seed,
    tasks: Number(process.env.BENCH_REAL_TASKS ?? 4),
    samplesPerTask: Number(process.env.BENCH_REAL_SAMPLES ?? 4),
    blockSize: 128,
    taskPromptTokens: 1000,
    minTurns: 4,
    maxTurns: 8,
    finalContextTokens: [2000, 3200],
    outputTokens: 32,
    toolDelayMedianS: 0.5,
    toolDelaySigma: 0.5,
  });
  const script = materialise(batch, seed);
  const expectedCalls = script.reduce((s, ep) => s + ep.maxTokens.length, 0);
  const modelDir = await buildTinyQwen3();
  let engines: RealVllm[] = [];
  try {
    engines = await startEngines(modelDir);
    const configs = await Promise.all(engines.map(async (e) => readCacheConfig(await metricsText(e))));
    const cache = configs[0]!;
    if (configs.some((c) => c.blockSize !== cache.blockSize || c.numGpuBlocks !== cache.numGpuBlocks)) throw new Error(`the instances' KV caches differ: ${JSON.stringify(configs)}`);
    const capacity = cache.numGpuBlocks * cache.blockSize;
    const { preset, points } = await calibrate(engines, capacity);
    console.log(`${batch.description}; through the gateway on 2 × vLLM ${ENGINE.maxNumSeqs} seqs / ${ENGINE.maxNumBatchedTokens}-token steps (engines started and calibrated in ${((performance.now() - wall) / 1000).toFixed(0)} s)`);
    console.log(
      `calibration: ${cache.blockSize}-token blocks, ${cache.numGpuBlocks} blocks = ${capacity} KV tokens per instance (vllm:cache_config_info); ` +
        `fitted c0 ${(1000 * preset.c0).toFixed(2)} ms, a ${(1e6 * preset.a).toFixed(1)} µs/token, b ${(1e9 * preset.b).toFixed(0)} ns/token (${points})`,
    );
    // Every policy once per round, each round in a rotated order so no policy always runs first.
    const runs = new Map<Variant, PolicyRun[]>(VARIANTS.map((v) => [v, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (let k = 0; k < VARIANTS.length; k++) {
        const v = VARIANTS[(k + round) % VARIANTS.length]!;
        const run = await runOnEngines(v, engines, cache, script);
        if (run.calls !== expectedCalls) throw new Error(`${v.label}: ${run.calls} calls answered, the workload has ${expectedCalls}`);
        const workload = simulatorWorkload(run.recorded, cache.blockSize, batch.description);
        const r = simulate({
          workload,
          preset,
          policy: createPolicy(v.policy),
          instances: engines.length,
          kvCapacityTokens: capacity,
          engine: { tokenBudget: ENGINE.maxNumBatchedTokens, maxRunning: ENGINE.maxNumSeqs },
          gate: v.gated ? KV_GATE_DEFAULTS : undefined,
        });
        if (r.requests !== expectedCalls) throw new Error(`${v.label}: the simulator ran ${r.requests} calls, the workload has ${expectedCalls}`);
        const c = run.counters;
        if (c.prefixQueries <= 0) throw new Error(`${v.label}: the engines counted no prefix-cache queries`);
        runs.get(v)!.push({ engine: c.prefixHits / c.prefixQueries, usageRate: run.usage.cached / run.usage.prompt, sim: r.hitRate, run, simMakespan: r.makespan });
        console.log(`  round ${round + 1}/${ROUNDS}, ${v.label}: ${run.calls} calls in ${run.wallS.toFixed(0)} s, engine hit ${pct(c.prefixHits / c.prefixQueries)}%, simulator ${pct(r.hitRate)}%`);
      }
    }
    const rows = VARIANTS.map((v) => {
      const all = runs.get(v)!;
      return {
        v,
        engine: meanAndSd(all.map((x) => 100 * x.engine)),
        sim: meanAndSd(all.map((x) => 100 * x.sim)),
        usage: meanAndSd(all.map((x) => 100 * x.usageRate)).mean,
        preemptions: all.reduce((s, x) => s + x.run.counters.preemptions, 0),
        wallS: meanAndSd(all.map((x) => x.run.wallS)).mean,
        simMakespan: meanAndSd(all.map((x) => x.simMakespan)).mean,
        all,
      };
    });
    // Two policies are told apart only beyond what the engines' own rounds vary (and never within TIE_BAND).
    const band = (i: number, j: number) => spreadBand(rows[i]!.engine.sd, rows[j]!.engine.sd, ROUNDS, TIE_BAND);
    const engineMeans = rows.map((r) => r.engine.mean);
    const simMeans = rows.map((r) => r.sim.mean);
    const engineRanks = ranksWithTies(engineMeans, band);
    const simRanks = ranksWithTies(simMeans, band);
    const pm = (x: { mean: number; sd: number }) => `${x.mean.toFixed(1)} ± ${x.sd.toFixed(1)}`;
    console.log(
      '\n' +
        table(
          ['policy', 'engine hit %', 'simulator hit %', 'difference (points)', 'engine rank', 'simulator rank', 'usage hit %', 'preemptions', 'makespan s engine/sim'],
          rows.map((r, i) => [r.v.label, pm(r.engine), pm(r.sim), (r.sim.mean - r.engine.mean).toFixed(1), String(engineRanks[i]), String(simRanks[i]), r.usage.toFixed(1), String(r.preemptions), `${r.wallS.toFixed(0)}/${r.simMakespan.toFixed(0)}`]),
        ),
    );
    console.log(
      `hit rates: mean ± standard deviation over ${ROUNDS} rounds; engine hit %: vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total, deltas over the run summed over both instances; ` +
        "usage hit %: the answers' prompt_tokens_details.cached_tokens / prompt_tokens; makespan: first call to last answer, mean of the rounds",
    );
    // How far the engines agree with themselves: pairs two rounds order oppositely by more than TIE_BAND.
    let selfInversions = 0;
    for (let x = 0; x < ROUNDS; x++) {
      for (let y = x + 1; y < ROUNDS; y++) selfInversions += inversions(rows.map((r) => 100 * r.all[x]!.engine), rows.map((r) => 100 * r.all[y]!.engine), TIE_BAND).length;
    }
    const pairBands = rows.flatMap((_, i) => rows.slice(i + 1).map((_, k) => band(i, i + 1 + k)));
    const worst = Math.max(...rows.map((r) => Math.abs(r.sim.mean - r.engine.mean)));
    const flipped = inversions(engineMeans, simMeans, band);
    const sameRanks = engineRanks.every((rank, i) => rank === simRanks[i]);
    const agreed = agreement(engineMeans, simMeans, band);
    // The engines' ranking is what their rounds resolve: the simulator matches it when it orders
    // every pair they tell apart the same way; a pair they tie, it may still separate.
    const sameRanking = agreed.same === agreed.resolved;
    const finer = separatedOnlyBy(engineMeans, simMeans, band);
    const pairs = (list: [number, number][]) => list.map(([i, j]) => `${rows[i]!.v.label} / ${rows[j]!.v.label}`).join(', ');
    console.log(
      `the engines' own rounds: ${selfInversions} pair${selfInversions === 1 ? '' : 's'} of policies ordered oppositely by more than ${TIE_BAND} points between two rounds; ` +
        `tie band per pair: twice the standard error of the difference of the engine means, at least ${TIE_BAND} points (${Math.min(...pairBands).toFixed(1)}–${Math.max(...pairBands).toFixed(1)})`,
    );
    console.log(
      `verdict: max |difference| ${worst.toFixed(1)} points (target ≤ ${TARGET_POINTS}: ${worst <= TARGET_POINTS ? 'met' : 'NOT met'}); ` +
        `ranking: of the ${agreed.resolved} pairs of policies the engines tell apart, the simulator orders ${agreed.same} the same way (${agreed.sameBeyondBand} by more than the band) ` +
        `(target: all: ${sameRanking ? 'met' : 'NOT met'}); ` +
        `${flipped.length === 0 ? 'no pair ordered oppositely by more than its band' : `ordered oppositely: ${pairs(flipped)}`}; ` +
        `ranks with ties ${sameRanks ? 'equal' : 'differ'}${finer.length > 0 ? ` (pairs the engines tie and the simulator separates: ${pairs(finer)})` : ''}`,
    );
    // The engine's counters against what its answers carried: they part when a preempted call is
    // looked up again on resuming (counted twice in the metrics, once in usage).
    for (const r of rows) {
      for (const [round, x] of r.all.entries()) {
        const gap = Math.abs(100 * (x.engine - x.usageRate));
        const promptGap = x.run.counters.promptTokens - x.run.usage.prompt;
        if (gap > 0.5 || promptGap !== 0) {
          console.log(
            `  ${r.v.label}, round ${round + 1}: /metrics and usage disagree: hit ${pct(x.engine)}% vs ${pct(x.usageRate)}%, ` +
              `${x.run.counters.prefixQueries} tokens queried vs ${x.run.usage.prompt} prompt tokens answered (vllm:prompt_tokens_total ${x.run.counters.promptTokens}), ${x.run.counters.preemptions} preemptions`,
          );
        }
      }
    }
  } finally {
    await Promise.all(engines.map((e) => e.close()));
    rmSync(modelDir, { recursive: true, force: true });
  }
  console.log(`real-engine section ${((performance.now() - wall) / 1000).toFixed(0)} s`);
}
