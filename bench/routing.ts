/**
 * Routing benchmark (shared/specs/routing.md): every policy on the same workloads and seeds, one
 * run each, in the discrete-event simulator; one table per workload × capacity setting; then the
 * router's own cost (decisions per second for 32k-token prompts over 8 instances, and CPU per
 * call for 256 chains growing to 32k tokens); last, the simulator checked against real engines
 * (bench/routing/real-engine.ts: two vLLM CPU instances, a small agent batch through the gateway
 * per policy, engine and simulator prefix hit rates and rankings side by side).
 *
 *   npm run bench:routing
 *
 * Environment:
 *   BENCH_TRACE         the Mooncake trace (default ../shared/traces/mooncake_fast25_synthetic_trace.jsonl
 *                       relative to the repository root)
 *   BENCH_TASKS         tasks of the simulated agent batch (default 64)
 *   BENCH_SAMPLES       samples per task (default 8)
 *   BENCH_SEEDS         its seeds (default 1,2,3)
 *   BENCH_ROUTER_ONLY   1: skip the simulations, print the router's cost (and the real-engine check) only (default unset)
 *   BENCH_REAL_ENGINE   0: skip the real-engine check; only: run nothing else (default: run it last;
 *                       without vLLM installed it prints a line saying to run scripts/install-vllm.sh)
 *   BENCH_REAL_TASKS    tasks of the real-engine agent batch (default 4)
 *   BENCH_REAL_SAMPLES  its samples per task (default 4)
 *   BENCH_REAL_SEED     its seed (default 1)
 *   BENCH_REAL_ROUNDS   runs of every policy on the engines, interleaved (default 3)
 * Sizes are chosen to finish in under 10 minutes on 2 cores, plus about 5 for the real engines.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { existsSync } from 'node:fs';
import { IncrementalHasher } from '../scheduler/routing/block-hash.js';
import { PrefixIndex } from '../scheduler/routing/prefix-index.js';
import { InstanceRegistry } from '../scheduler/registry.js';
import { Router } from '../scheduler/router.js';
import { KvGate, KV_GATE_DEFAULTS } from '../scheduler/routing/kv-gate.js';
import { createPolicy, POLICY_NAMES, type PolicyName } from '../scheduler/routing/policies/index.js';
import type { InstanceView } from '../scheduler/routing/types.js';
import { agentBatch, computeBounds, loadMooncake, PRESETS, simulate, type Bounds, type ModelPreset, type Workload } from '../scheduler/simulator/index.js';
import type { SimKvEventOptions } from '../scheduler/simulator/simulator.js';
import { runRealEngineComparison } from './routing/real-engine.js';
import { table } from './routing/table.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tracePath = process.env.BENCH_TRACE ?? path.resolve(root, '../shared/traces/mooncake_fast25_synthetic_trace.jsonl');
const seeds = (process.env.BENCH_SEEDS ?? '1,2,3').split(',').map(Number);
const routerOnly = process.env.BENCH_ROUTER_ONLY === '1';
const realEngine = process.env.BENCH_REAL_ENGINE ?? '1';

interface Scenario {
  workload: Workload;
  seed: number;
  preset: ModelPreset;
  instances: number;
  /** Label → KV capacity per instance, scarce to ample. */
  capacities: [string, number][];
}

/** A policy run: the name printed, the policy, and whether the router's admission gates it. */
interface Variant {
  label: string;
  policy: PolicyName;
  gated: boolean;
}

/** As each ships: the baselines route every call at once; ours routes behind the router's admission. */
const SHIPPED: Variant[] = [
  ...POLICY_NAMES.filter((p) => p !== 'ours').map((policy) => ({ label: policy, policy, gated: false })),
  { label: 'ours', policy: 'ours', gated: true },
  { label: 'ours, no admission', policy: 'ours', gated: false },
];
/** Every prefix- or load-aware baseline behind the same admission, to separate routing from admission. */
const GATED: Variant[] = (
  ['verl-sticky', 'sglang-cache-aware', 'llmd-weighted', 'dynamo-cost', 'uni-agent-kv-aware', 'skyrl-sticky-least-loaded', 'prime-rl-cache-aware'] as const
).map((policy) => ({
  label: `${policy} + admission`,
  policy,
  gated: true,
}));

/** Throughput per variant label, per workload × capacity × seed, for the summary. */
const summary = new Map<string, Map<string, number>>();

function runTable(s: Scenario, label: string, capacity: number, bounds: Bounds, variants: Variant[], key: string): void {
  const rows: string[][] = [];
  let sticky = 0;
  const tput = summary.get(key) ?? new Map<string, number>();
  summary.set(key, tput);
  for (const v of variants) {
    const r = simulate({
      workload: s.workload,
      preset: s.preset,
      policy: createPolicy(v.policy),
      instances: s.instances,
      kvCapacityTokens: capacity,
      gate: v.gated ? KV_GATE_DEFAULTS : undefined,
    });
    if (v.policy === 'verl-sticky' && !v.gated) sticky = r.throughput;
    tput.set(v.label, r.throughput);
    rows.push([
      v.label,
      r.throughput.toFixed(0),
      sticky > 0 ? (r.throughput / sticky).toFixed(2) : '',
      r.episodesPerHour.toFixed(0),
      r.makespan.toFixed(0),
      (r.makespan / bounds.makespanBound).toFixed(2),
      (100 * r.hitRate).toFixed(1),
      bounds.hitRateCeiling > 0 ? (r.hitRate / bounds.hitRateCeiling).toFixed(2) : '',
      (100 * (r.expectedCachedTokens / r.promptTokens)).toFixed(1),
      r.latencyP50.toFixed(1),
      r.latencyP99.toFixed(1),
      r.meanRouterWait.toFixed(1),
      r.kvImbalance.toFixed(2),
      String(r.migrations),
      (r.forfeitedTokens / 1e6).toFixed(1),
    ]);
  }
  const eps = s.workload.kind === 'closed' ? 'episodes/h' : 'requests/h';
  console.log(`\n${label}`);
  console.log(table(['policy', 'out tok/s', '×sticky', eps, 'makespan s', '×bound', 'hit %', '×ceiling', 'est hit %', 'p50 s', 'p99 s', 'wait s', 'KV imbal', 'migrations', 'forfeit Mtok'], rows));
}

function runScenario(s: Scenario, withGatedBaselines: boolean): void {
  console.log(`\n## ${s.workload.description}`);
  console.log(`   ${s.preset.name} preset, ${s.instances} instances, ${s.workload.blockSize}-token blocks`);
  for (const [label, capacity] of s.capacities) {
    const bounds = computeBounds(s.workload, s.preset, s.instances, capacity);
    console.log(
      `\n### ${label}: ${(capacity / 1000).toFixed(0)}k KV tokens per instance — bounds: hit-rate ceiling ${(100 * bounds.hitRateCeiling).toFixed(1)}%, ` +
        `work ${bounds.workBound.toFixed(0)} s, critical path ${bounds.criticalPath.toFixed(0)} s`,
    );
    const key = `${s.workload.name} ${label} seed ${s.seed}`;
    runTable(s, 'as shipped (×sticky: against verl-sticky as shipped)', capacity, bounds, SHIPPED, key);
    if (withGatedBaselines) runTable(s, "baselines behind the router's admission (routing vs admission)", capacity, bounds, GATED, key);
  }
}

/** Per seed and capacity: ours against the best baseline as shipped and behind the same admission. */
function printSummary(seeds: number[], labels: string[]): void {
  console.log('\n## Summary: ours against the best baseline (out tok/s), per seed');
  for (const label of labels) {
    const rows: string[][] = [];
    const ratios = { shipped: [] as number[], gated: [] as number[], sticky: [] as number[] };
    for (const seed of seeds) {
      const t = summary.get(`agent-batch ${label} seed ${seed}`);
      if (!t) continue;
      const ours = t.get('ours')!;
      const best = (labels: string[]) => labels.reduce((b, l) => ((t.get(l) ?? 0) > (t.get(b) ?? 0) ? l : b));
      const shipped = best(SHIPPED.filter((v) => v.policy !== 'ours').map((v) => v.label));
      const gated = best(GATED.map((v) => v.label));
      ratios.shipped.push(ours / t.get(shipped)!);
      ratios.gated.push(ours / t.get(gated)!);
      ratios.sticky.push(ours / t.get('verl-sticky')!);
      rows.push([String(seed), ours.toFixed(0), (ours / t.get('verl-sticky')!).toFixed(2), `${shipped} ${t.get(shipped)!.toFixed(0)}`, (ours / t.get(shipped)!).toFixed(3), `${gated} ${t.get(gated)!.toFixed(0)}`, (ours / t.get(gated)!).toFixed(3)]);
    }
    const mean = (x: number[]) => (x.reduce((a, b) => a + b, 0) / x.length).toFixed(3);
    rows.push(['mean', '', mean(ratios.sticky), '', mean(ratios.shipped), '', mean(ratios.gated)]);
    console.log(`\n${label}`);
    console.log(table(['seed', 'ours', '×sticky', 'best baseline as shipped', 'ours ×', 'best baseline + admission', 'ours ×'], rows));
  }
}

/**
 * Router cost for 32k-token prompts over 8 instances: one decision = incrementally hashing the
 * turn's new 1k tokens (the 31k before were hashed on earlier turns), the policy's lookups on every
 * instance, and the index insert of the chosen instance.
 */
function routerCost(print: boolean): void {
  const instances = 8;
  const promptTokens = 32_768;
  const turnTokens = 1024;
  const chains = 64;
  const views: InstanceView[] = Array.from({ length: instances }, (_, i) => ({
    name: `i${i}`,
    kvCapacityTokens: 400_000,
    kvUsedTokens: 100_000 + 20_000 * i,
    inFlightRequests: 4,
    inFlightTokens: 150_000,
    queuedRequests: 0,
    healthy: true,
  }));
  const prompts = Array.from({ length: chains }, (_, c) => Array.from({ length: promptTokens }, (_, i) => (c * 7919 + i * 31) % 150_000));
  const variants = [
    { label: 'ours + admission', name: 'ours', gated: true },
    { label: 'ours', name: 'ours', gated: false },
    { label: 'sglang-cache-aware', name: 'sglang-cache-aware', gated: false },
    { label: 'dynamo-cost', name: 'dynamo-cost', gated: false },
  ] as const;
  for (const { label, name, gated } of variants) {
    const policy = createPolicy(name);
    const hasher = new IncrementalHasher();
    const index = new PrefixIndex(hasher.blockSize);
    for (const v of views) index.setCapacity(v.name, v.kvCapacityTokens);
    // The admission check of every call, with every chain's previous turn reserved.
    const gate = gated ? new KvGate() : undefined;
    let hashing = 0;
    let routing = 0;
    for (let c = 0; c < chains; c++) {
      // The previous turn: hashed and routed before the timed one.
      const previous = prompts[c]!.slice(0, promptTokens - turnTokens);
      const home = `i${c % instances}`;
      index.insert(home, hasher.hashes(`c${c}`, previous), `c${c}`);
      const before = { chainId: `c${c}`, blocks: [], blockSize: hasher.blockSize, promptTokens: previous.length, expectedOutputTokens: 256 };
      gate?.placed(before, home);
      gate?.ended(before, home, 1, previous.length + 256);
      const t0 = performance.now();
      const blocks = hasher.hashes(`c${c}`, prompts[c]!);
      const t1 = performance.now();
      const request = { chainId: `c${c}`, blocks, blockSize: hasher.blockSize, promptTokens, expectedOutputTokens: 256 };
      const offered = gate ? gate.admissible(request, views, 2) : views;
      const decision = policy.route(request, offered.length > 0 ? offered : views, index);
      gate?.placed(request, decision.instance);
      index.insert(decision.instance, blocks, `c${c}`);
      const t2 = performance.now();
      hashing += t1 - t0;
      routing += t2 - t1;
    }
    const per = (hashing + routing) / chains / 1000;
    if (!print) continue;
    console.log(
      `${label.padEnd(20)} ${(1 / per).toFixed(0).padStart(7)} decisions/s  (${(per * 1e6).toFixed(0)} µs each: ` +
        `${((hashing / chains) * 1000).toFixed(0)} µs incremental hashing of the new 1k tokens, ${((routing / chains) * 1000).toFixed(0)} µs ${gate ? 'admission + ' : ''}lookups on 8 instances + index insert)`,
    );
  }
  if (!print) return;
  const reps = 200;
  const start = performance.now();
  for (let r = 0; r < reps; r++) new IncrementalHasher().hashes('x', prompts[r % chains]!);
  console.log(`hashing a whole 32k-token prompt from scratch: ${(((performance.now() - start) / reps) * 1000).toFixed(0)} µs`);
}

/**
 * The router's CPU per model call as the gateway makes them: 256 chains over 8 instances, each
 * growing to 32k tokens over 16 turns (a 1k-token system prompt shared by all, then 1,792 new
 * prompt tokens and 256 sampled per turn) on instances of `kvCapacityTokens` each, every turn
 * placed (`place`, all 256 in flight at once) and finished (`finished`) through the production
 * `Router` with the `ours` policy, the incremental hasher and the prefix index. Prompts are passed as views of each chain's token buffer. Printed: CPU µs per call (mean,
 * and on the last turn, at 30–32k tokens), and the index's block insertions and removals per call.
 */
function routerCallCost(kvCapacityTokens: number): void {
  const instances = 8;
  const chains = 256;
  const turns = 16;
  const turnTokens = 2048;
  const outputTokens = 256;
  const systemTokens = 1024;
  const hasher = new IncrementalHasher();
  const index = new PrefixIndex(hasher.blockSize);
  const engines = Array.from({ length: instances }, (_, i) => ({ name: `i${i}`, kind: 'vllm' as const, url: `http://127.0.0.1:9/${i}`, kvCapacityTokens }));
  for (const e of engines) index.setCapacity(e.name, e.kvCapacityTokens);
  const router = new Router(new InstanceRegistry(engines), createPolicy('ours'), index, {
    blockSize: hasher.blockSize,
    blockHashes: (chainId, ids, tail) => hasher.hashes(chainId, ids, tail),
  });
  const tokens = Array.from({ length: chains }, (_, c) => Uint32Array.from({ length: turns * turnTokens }, (_, i) => (i < systemTokens ? i : (c * 7919 + i * 31) % 150_000)));
  const cpu = (): number => {
    const u = process.cpuUsage();
    return u.user + u.system;
  };
  let total = 0;
  let last = 0;
  const operations = index.operations;
  for (let t = 0; t < turns; t++) {
    const promptEnd = t * turnTokens + turnTokens - outputTokens;
    const start = cpu();
    // The batch's turn: every chain's call in flight at once, then each finishes.
    const placements = tokens.map((ids, c) => router.place({ chainId: `c${c}`, promptIds: ids.subarray(0, promptEnd), expectedOutputTokens: outputTokens })!);
    placements.forEach((placement, c) => router.finished(placement, tokens[c]!.subarray(promptEnd, promptEnd + outputTokens)));
    const spent = cpu() - start;
    total += spent;
    if (t === turns - 1) last = spent;
  }
  const calls = chains * turns;
  console.log(
    `${(kvCapacityTokens / 1000).toFixed(0)}k KV tokens per instance: ${(total / calls).toFixed(1)} µs CPU per call on average, ` +
      `${(last / chains).toFixed(1)} µs on the last turn; ${((index.operations - operations) / calls).toFixed(1)} index block insertions and removals per call`,
  );
}

/**
 * Ours on the estimated prefix index against ours on the engines' own KV events (the simulated
 * engines publish their caches' stores and evictions, delivered late and sometimes lost), behind
 * the router's admission, on one agent batch at scarce and preset memory. `events %`: the policy's
 * lookups answered from events (the rest fell back to the estimate: a feed with a gap, or stale).
 * On a live feed the prompts of calls in flight count as held (the engine is computing them); the
 * last row turns that off.
 */
function runKvEventTables(workload: Workload, preset: ModelPreset, instances: number, capacities: [string, number][]): void {
  console.log(`\n## Ours on the estimated index vs on the engines' KV events — ${workload.description}`);
  const rows: [string, SimKvEventOptions | undefined][] = [['estimated index', undefined]];
  for (const lossRate of [0, 0.01]) {
    for (const delayS of [0, 0.05, 0.5]) rows.push([`events, ${delayS * 1000} ms, ${lossRate * 100}% loss`, { delayS, lossRate }]);
  }
  rows.push(['events, 50 ms, 1% loss, replay', { delayS: 0.05, lossRate: 0.01, replay: true }]);
  rows.push(['events, 50 ms, 0% loss, no in-flight prompts', { delayS: 0.05, lossRate: 0, inFlight: false }]);
  for (const [label, capacity] of capacities) {
    const out: string[][] = [];
    for (const [name, kvEvents] of rows) {
      const r = simulate({ workload, preset, policy: createPolicy('ours'), instances, kvCapacityTokens: capacity, gate: KV_GATE_DEFAULTS, kvEvents });
      const kv = r.kvEvents;
      const lookups = kv ? kv.lookupsFromEvents + kv.lookupsFromEstimate : 0;
      out.push([
        name,
        r.throughput.toFixed(0),
        r.makespan.toFixed(0),
        (100 * r.hitRate).toFixed(1),
        (100 * (r.expectedCachedTokens / r.promptTokens)).toFixed(1),
        String(r.migrations),
        kv && lookups > 0 ? (100 * (kv.lookupsFromEvents / lookups)).toFixed(1) : '',
        kv ? `${kv.lost}/${kv.batches}` : '',
      ]);
    }
    console.log(`\n${label}: ${(capacity / 1000).toFixed(0)}k KV tokens per instance`);
    console.log(table(['ours on', 'out tok/s', 'makespan s', 'hit %', 'est hit %', 'migrations', 'events %', 'lost/batches'], out));
  }
}

const wall = performance.now();
if (realEngine !== 'only') {
  const tasks = Number(process.env.BENCH_TASKS ?? 64);
  const samples = Number(process.env.BENCH_SAMPLES ?? 8);
  const preset = PRESETS['8b'];
  // Scarce to ample KV memory per instance, the same settings for every workload.
  const capacities: [string, number][] = [
    ['scarce', preset.kvCapacityTokens / 2],
    ['preset', preset.kvCapacityTokens],
    ['ample', preset.kvCapacityTokens * 4],
  ];
  if (!routerOnly) {
    // 256-token blocks in the simulation keep the run within minutes (the router's default is 64).
    // Every seed at scarce and preset capacity (the target's settings); ample memory on the first seed.
    for (const seed of seeds) {
      runScenario(
        { workload: agentBatch({ seed, tasks, samplesPerTask: samples, blockSize: 256 }), seed, preset, instances: 8, capacities: seed === seeds[0] ? capacities : capacities.slice(0, 2) },
        true,
      );
    }
    printSummary(seeds, ['scarce', 'preset']);
    runKvEventTables(agentBatch({ seed: seeds[0], tasks, samplesPerTask: samples, blockSize: 256 }), preset, 8, capacities.slice(0, 2));
    if (existsSync(tracePath)) {
      // The trace is light for 8 instances: replayed 4× faster on 4 instances so routing matters.
      runScenario({ workload: loadMooncake(tracePath, { timeScale: 0.25 }), seed: 0, preset, instances: 4, capacities }, false);
    } else {
      console.log(`\n(no Mooncake trace at ${tracePath}; set BENCH_TRACE)`);
    }
  }
  console.log('\n## Router cost');
  // The first pass only warms the JIT up.
  routerCost(false);
  routerCost(true);
  console.log('\nCPU per call, 256 chains × 16 turns to 32k tokens over 8 instances (place + finished):');
  // Room for 32 chains of 32k tokens per instance (the policy packs some instances fuller: they evict).
  routerCallCost(1_200_000);
}
// Last: it starts two vLLM servers, minutes of the run.
if (realEngine !== '0') await runRealEngineComparison();
console.log(`\nbenchmark wall time ${((performance.now() - wall) / 1000).toFixed(0)} s`);
