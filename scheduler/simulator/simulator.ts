/**
 * The discrete-event simulator of the routing spec: N engine instances (engine.ts) fed by the SAME
 * policy objects the gateway uses. The router keeps its own prefix index, updated when it routes a
 * call and when the call finishes, exactly as the gateway will; it never reads the engines' true
 * caches, so the index's approximation is part of what is measured. Instance views carry the
 * engine metrics a real router can scrape (KV usage, queue length) plus the router's own counts.
 */
import { PrefixIndex } from '../routing/prefix-index.js';
import type { InstanceView, RouteRequest, RoutingPolicy } from '../routing/types.js';
import { SimInstance, type EngineOptions, type SimRequest } from './engine.js';
import { EventHeap } from './heap.js';
import type { ModelPreset } from './presets.js';
import type { Workload } from './workload.js';

export interface SimulationOptions {
  workload: Workload;
  preset: ModelPreset;
  policy: RoutingPolicy;
  /** Engine instances. Default 8. */
  instances?: number;
  /** KV capacity of each instance, tokens. Default the preset's. */
  kvCapacityTokens?: number;
  engine?: EngineOptions;
}

export interface SimulationResult {
  policy: string;
  requests: number;
  episodes: number;
  promptTokens: number;
  outputTokens: number;
  /** Prompt tokens served from the engines' caches. */
  cachedTokens: number;
  /** Prompt tokens the router expected to be cached (its index's estimate). */
  expectedCachedTokens: number;
  /** Seconds from the first release to the last finish. */
  makespan: number;
  /** Output tokens per second of makespan. */
  throughput: number;
  episodesPerHour: number;
  /** Token-weighted prompt hit rate. */
  hitRate: number;
  /** Turn latency (release to last token), seconds. */
  latencyP50: number;
  latencyP99: number;
  /** Time-averaged (max − min KV in use) / capacity across instances. */
  kvImbalance: number;
  /** Calls of a chain placed on another instance than its previous call. */
  migrations: number;
  /** Prompt tokens cached on the previous instance but not on the new one, summed over migrations. */
  forfeitedTokens: number;
}

type SimEvent = { kind: 'release'; episode: number; turn: number } | { kind: 'step'; instance: number; version: number };

export function simulate(options: SimulationOptions): SimulationResult {
  const { workload, preset, policy } = options;
  const n = options.instances ?? 8;
  const capacity = options.kvCapacityTokens ?? preset.kvCapacityTokens;
  const bs = workload.blockSize;
  const engines = Array.from({ length: n }, (_, i) => new SimInstance(i, `i${i}`, capacity, bs, preset, options.engine));
  for (const ep of workload.episodes) {
    for (const t of ep.turns) {
      if (Math.ceil((t.promptTokens + t.outputTokens) / bs) > engines[0]!.cache.capacityBlocks) {
        throw new Error(`a ${t.promptTokens}+${t.outputTokens}-token call cannot fit a ${capacity}-token instance`);
      }
    }
  }
  const index = new PrefixIndex(bs);
  for (const e of engines) index.setCapacity(e.name, capacity);
  const inFlightRequests = new Array<number>(n).fill(0);
  const inFlightTokens = new Array<number>(n).fill(0);
  /** chain → instance of its previous call (Mooncake sessions span several episodes). */
  const lastInstance = new Map<string, number>();
  const routed = new Map<number, RouteRequest>();
  const heap = new EventHeap<SimEvent>();
  workload.episodes.forEach((ep, e) => heap.push(ep.start, { kind: 'release', episode: e, turn: 0 }));
  const t0 = heap.peekTime();

  const latencies: number[] = [];
  let nextId = 0;
  let promptTokens = 0;
  let outputTokens = 0;
  let cachedTokens = 0;
  let expectedCachedTokens = 0;
  let migrations = 0;
  let forfeited = 0;
  let lastFinish = t0;
  let imbalanceArea = 0;
  let imbalance = 0;
  let lastT = t0;

  const views = (): InstanceView[] =>
    engines.map((e, i) => ({
      name: e.name,
      kvCapacityTokens: capacity,
      kvUsedTokens: e.usedTokens(),
      inFlightRequests: inFlightRequests[i]!,
      inFlightTokens: inFlightTokens[i]!,
      queuedRequests: e.waiting.length,
      healthy: true,
    }));

  const schedule = (e: SimInstance, end: number | null): void => {
    if (end !== null) heap.push(end, { kind: 'step', instance: e.index, version: e.version });
  };

  const finish = (r: SimRequest, now: number): void => {
    const e = engines[r.instance]!;
    const req = routed.get(r.id)!;
    routed.delete(r.id);
    inFlightRequests[r.instance]!--;
    inFlightTokens[r.instance]! -= r.spec.promptTokens + r.spec.outputTokens;
    index.insert(e.name, r.spec.seq.slice(0, r.spec.kvBlocks));
    policy.onFinished?.(req, e.name);
    latencies.push(now - r.released);
    outputTokens += r.spec.outputTokens;
    cachedTokens += r.cachedTokens;
    lastFinish = now;
    const ep = workload.episodes[r.episode]!;
    if (workload.kind === 'closed' && r.turn + 1 < ep.turns.length) {
      heap.push(now + ep.delays[r.turn]!, { kind: 'release', episode: r.episode, turn: r.turn + 1 });
    }
  };

  for (let ev = heap.pop(); ev; ev = heap.pop()) {
    const now = ev.time;
    imbalanceArea += imbalance * (now - lastT);
    lastT = now;
    const item = ev.item;
    if (item.kind === 'release') {
      const ep = workload.episodes[item.episode]!;
      const spec = ep.turns[item.turn]!;
      const request: RouteRequest = {
        chainId: ep.chainId,
        blocks: spec.seq.slice(0, spec.promptBlocks),
        blockSize: bs,
        promptTokens: spec.promptTokens,
        expectedOutputTokens: spec.outputTokens,
      };
      const decision = policy.route(request, views(), index);
      const target = engines.findIndex((e) => e.name === decision.instance);
      if (target < 0) throw new Error(`policy ${policy.name} chose unknown instance ${decision.instance}`);
      const prev = lastInstance.get(ep.chainId);
      if (prev !== undefined && prev !== target) {
        migrations++;
        forfeited += Math.max(0, engines[prev]!.cachedBlocks(spec) - engines[target]!.cachedBlocks(spec)) * bs;
      }
      lastInstance.set(ep.chainId, target);
      index.insert(decision.instance, request.blocks);
      inFlightRequests[target]!++;
      inFlightTokens[target]! += spec.promptTokens + spec.outputTokens;
      const r: SimRequest = {
        id: nextId++,
        episode: item.episode,
        turn: item.turn,
        spec,
        released: now,
        instance: target,
        cachedTokens: 0,
        expectedCachedTokens: decision.expectedCachedTokens,
        prefillLeft: spec.promptTokens,
        generated: 0,
        alloc: null,
        finished: -1,
      };
      routed.set(r.id, request);
      promptTokens += spec.promptTokens;
      expectedCachedTokens += decision.expectedCachedTokens;
      const e = engines[target]!;
      e.enqueue(r);
      if (!e.busy) schedule(e, e.advance(now).next);
      else schedule(e, e.interrupt(now));
    } else {
      const e = engines[item.instance]!;
      if (item.version !== e.version) continue;
      const { finished, next } = e.advance(now);
      for (const r of finished) finish(r, now);
      schedule(e, next);
    }
    let max = -Infinity;
    let min = Infinity;
    for (const e of engines) {
      const u = e.usedTokens();
      if (u > max) max = u;
      if (u < min) min = u;
    }
    imbalance = (max - min) / capacity;
  }

  const unfinished = engines.reduce((s, e) => s + e.waiting.length + e.running.length, 0);
  if (unfinished > 0) throw new Error(`simulation ended with ${unfinished} requests unfinished`);
  const makespan = lastFinish - t0;
  latencies.sort((x, y) => x - y);
  const pct = (p: number): number => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? 0;
  return {
    policy: policy.name,
    requests: nextId,
    episodes: workload.episodes.length,
    promptTokens,
    outputTokens,
    cachedTokens,
    expectedCachedTokens,
    makespan,
    throughput: makespan > 0 ? outputTokens / makespan : 0,
    episodesPerHour: makespan > 0 ? (workload.episodes.length / makespan) * 3600 : 0,
    hitRate: promptTokens > 0 ? cachedTokens / promptTokens : 0,
    latencyP50: pct(0.5),
    latencyP99: pct(0.99),
    kvImbalance: makespan > 0 ? imbalanceArea / makespan : 0,
    migrations,
    forfeitedTokens: forfeited,
  };
}
