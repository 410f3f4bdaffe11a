/**
 * Routing benchmark (shared/specs/routing.md): every policy on the same workloads and seeds, one
 * run each, in the discrete-event simulator; one table per workload × capacity setting; then the
 * router's own cost (decisions per second for 32k-token prompts over 8 instances).
 *
 *   npm run bench:routing
 *
 * Environment: BENCH_TRACE overrides the Mooncake trace (default ../shared/traces/… relative to
 * the repository root); BENCH_TASKS (default 64) and BENCH_SAMPLES (default 8) size the agent
 * batch; BENCH_SEED (default 1). Sizes are chosen to finish in a few minutes on 2 cores.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { existsSync } from 'node:fs';
import { IncrementalHasher } from '../scheduler/routing/block-hash.js';
import { PrefixIndex } from '../scheduler/routing/prefix-index.js';
import { createPolicy, POLICY_NAMES } from '../scheduler/routing/policies/index.js';
import type { InstanceView } from '../scheduler/routing/types.js';
import { agentBatch, computeBounds, loadMooncake, PRESETS, simulate, type ModelPreset, type Workload } from '../scheduler/simulator/index.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tracePath = process.env.BENCH_TRACE ?? path.resolve(root, '../shared/traces/mooncake_fast25_synthetic_trace.jsonl');
const seed = Number(process.env.BENCH_SEED ?? 1);

interface Scenario {
  workload: Workload;
  preset: ModelPreset;
  instances: number;
  /** Label → KV capacity per instance, scarce to ample. */
  capacities: [string, number][];
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

function runScenario(s: Scenario): void {
  console.log(`\n## ${s.workload.description}`);
  console.log(`   ${s.preset.name} preset, ${s.instances} instances, ${s.workload.blockSize}-token blocks`);
  for (const [label, capacity] of s.capacities) {
    const bounds = computeBounds(s.workload, s.preset, s.instances, capacity);
    console.log(
      `\n### ${label}: ${(capacity / 1000).toFixed(0)}k KV tokens per instance — bounds: hit-rate ceiling ${(100 * bounds.hitRateCeiling).toFixed(1)}%, ` +
        `work ${bounds.workBound.toFixed(0)} s, critical path ${bounds.criticalPath.toFixed(0)} s`,
    );
    const rows: string[][] = [];
    let sticky = 0;
    for (const name of POLICY_NAMES) {
      const r = simulate({ workload: s.workload, preset: s.preset, policy: createPolicy(name), instances: s.instances, kvCapacityTokens: capacity });
      if (name === 'verl-sticky') sticky = r.throughput;
      rows.push([
        name,
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
        r.kvImbalance.toFixed(2),
        String(r.migrations),
        (r.forfeitedTokens / 1e6).toFixed(1),
      ]);
    }
    const eps = s.workload.kind === 'closed' ? 'episodes/h' : 'requests/h';
    console.log(table(['policy', 'out tok/s', '×sticky', eps, 'makespan s', '×bound', 'hit %', '×ceiling', 'est hit %', 'p50 s', 'p99 s', 'KV imbal', 'migrations', 'forfeit Mtok'], rows));
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
  for (const name of ['ours', 'sglang-cache-aware', 'dynamo-cost'] as const) {
    const policy = createPolicy(name);
    const hasher = new IncrementalHasher();
    const index = new PrefixIndex(hasher.blockSize);
    for (const v of views) index.setCapacity(v.name, v.kvCapacityTokens);
    let hashing = 0;
    let routing = 0;
    for (let c = 0; c < chains; c++) {
      // The previous turn: hashed and routed before the timed one.
      const previous = prompts[c]!.slice(0, promptTokens - turnTokens);
      index.insert(`i${c % instances}`, hasher.hashes(`c${c}`, previous));
      const t0 = performance.now();
      const blocks = hasher.hashes(`c${c}`, prompts[c]!);
      const t1 = performance.now();
      const decision = policy.route({ chainId: `c${c}`, blocks, blockSize: hasher.blockSize, promptTokens, expectedOutputTokens: 256 }, views, index);
      index.insert(decision.instance, blocks);
      const t2 = performance.now();
      hashing += t1 - t0;
      routing += t2 - t1;
    }
    const per = (hashing + routing) / chains / 1000;
    if (!print) continue;
    console.log(
      `${name.padEnd(20)} ${(1 / per).toFixed(0).padStart(7)} decisions/s  (${(per * 1e6).toFixed(0)} µs each: ` +
        `${((hashing / chains) * 1000).toFixed(0)} µs incremental hashing of the new 1k tokens, ${((routing / chains) * 1000).toFixed(0)} µs lookups on 8 instances + index insert)`,
    );
  }
  if (!print) return;
  const reps = 200;
  const start = performance.now();
  for (let r = 0; r < reps; r++) new IncrementalHasher().hashes('x', prompts[r % chains]!);
  console.log(`hashing a whole 32k-token prompt from scratch: ${(((performance.now() - start) / reps) * 1000).toFixed(0)} µs`);
}

const wall = performance.now();
const tasks = Number(process.env.BENCH_TASKS ?? 64);
const samples = Number(process.env.BENCH_SAMPLES ?? 8);
const preset = PRESETS['8b'];
// Scarce to ample KV memory per instance, the same settings for every workload.
const capacities: [string, number][] = [
  ['scarce', preset.kvCapacityTokens / 2],
  ['preset', preset.kvCapacityTokens],
  ['ample', preset.kvCapacityTokens * 4],
];
// 256-token blocks in the simulation keep the run within minutes (the router's default is 64).
runScenario({
  workload: agentBatch({ seed, tasks, samplesPerTask: samples, blockSize: 256 }),
  preset,
  instances: 8,
  capacities,
});
if (existsSync(tracePath)) {
  // The trace is light for 8 instances: replayed 4× faster on 4 instances so routing matters.
  runScenario({
    workload: loadMooncake(tracePath, { timeScale: 0.25 }),
    preset,
    instances: 4,
    capacities,
  });
} else {
  console.log(`\n(no Mooncake trace at ${tracePath}; set BENCH_TRACE)`);
}
console.log('\n## Router cost');
// The first pass only warms the JIT up.
routerCost(false);
routerCost(true);
console.log(`\nbenchmark wall time ${((performance.now() - wall) / 1000).toFixed(0)} s`);
