/**
 * The discrete-event simulator of the routing spec: N engine instances (engine.ts) fed by the SAME
 * policy objects the gateway uses. The router keeps its own prefix index, updated when it routes a
 * call and when the call finishes, exactly as the gateway will; it never reads the engines' true
 * caches, so the index's approximation is part of what is measured. Instance views carry the
 * engine metrics a real router can scrape (KV usage, queue length) plus the router's own counts.
 */
import { createRng } from '../../engine-sim/prng.js';
import { PrefixIndex } from '../routing/prefix-index.js';
import { KvGate, type KvGateOptions } from '../routing/kv-gate.js';
import { EventsOrEstimate, KV_EVENT_DEFAULTS, KvEventIndex, type KvEventBatch } from '../routing/kv-event-index.js';
import type { InstanceView, PrefixLookup, RouteRequest, RoutingPolicy } from '../routing/types.js';
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
  /**
   * Token-level admission in the router (routing/kv-gate.ts), as the gateway's router applies it.
   * Default none: every call is routed when released.
   */
  gate?: KvGateOptions;
  /**
   * The engines publish their caches' stores and evictions as KV events (one batch per engine
   * step), delivered to the router's event index (routing/kv-event-index.ts) `delayS` later, each
   * batch lost with probability `lossRate` (seeded by `seed`, default 1). With `replay`, a gap the
   * index reports is replayed from the publisher (another `delayS`, never lost), as vLLM's replay
   * socket allows. Policies look up the events where an instance's feed is live, the estimated
   * index elsewhere (`staleAfterS`, default 10 s), with the prompts of calls in flight counted as
   * held (`inFlight`, default true). Default none: the estimated index only.
   */
  kvEvents?: SimKvEventOptions;
  /**
   * Called on every routed call before the policy decides, with the lookup the policy reads and
   * each instance's true cached prefix of the prompt, in blocks (for tests).
   */
  onRoute?: (request: RouteRequest, lookup: PrefixLookup, cachedBlocks: (instance: string) => number) => void;
}

export interface SimKvEventOptions {
  delayS: number;
  lossRate: number;
  seed?: number;
  replay?: boolean;
  staleAfterS?: number;
  /** Whether prompts in flight count as held on a live feed (`EventsOrEstimate`). Default true. */
  inFlight?: boolean;
}

/** The event feed of a run with `kvEvents`. */
export interface SimKvEventStats {
  batches: number;
  lost: number;
  replayed: number;
  /** Policy lookups answered from events / from the estimated index. */
  lookupsFromEvents: number;
  lookupsFromEstimate: number;
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
  /** Calls the gate held before routing them. */
  heldCalls: number;
  /** Mean time from a call's release to its routing (the gate's wait), seconds. */
  meanRouterWait: number;
  /** Set with `kvEvents`. */
  kvEvents?: SimKvEventStats;
}

type SimEvent =
  | { kind: 'release'; episode: number; turn: number }
  | { kind: 'step'; instance: number; version: number }
  /** The gate's next deadline (a reservation lapses, a wait runs out), in the gate's ms. */
  | { kind: 'wake'; at: number; atMs: number }
  /** A KV event batch of an engine reaching the router. */
  | { kind: 'kv'; instance: number; batch: KvEventBatch };

/** A released turn, routed at once or held by the gate. */
interface Released {
  episode: number;
  turn: number;
  released: number;
}

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
  /** The router's clock, ms (the event index's staleness). */
  let clockMs = 0;
  const kv = options.kvEvents;
  const kvIndex = kv ? new KvEventIndex(bs, { mapping: 'same-hashes', staleAfterMs: 1000 * (kv.staleAfterS ?? KV_EVENT_DEFAULTS.staleAfterMs / 1000) }) : undefined;
  const lookup = kvIndex ? new EventsOrEstimate(kvIndex, index, () => clockMs, kv!.inFlight ?? true) : index;
  const kvStats: SimKvEventStats = { batches: 0, lost: 0, replayed: 0, lookupsFromEvents: 0, lookupsFromEstimate: 0 };
  const kvRng = createRng(kv?.seed ?? 1);
  const kvSeq = new Array<number>(n).fill(0);
  /** Per engine: its lost batches by sequence number, for replay. */
  const kvLost = engines.map(() => new Map<number, KvEventBatch>());
  if (kv) {
    for (const e of engines) {
      e.publishKvEvents();
      kvIndex!.attach(e.name);
    }
  }
  const inFlightRequests = new Array<number>(n).fill(0);
  const inFlightTokens = new Array<number>(n).fill(0);
  /** chain → instance of its previous call (Mooncake sessions span several episodes). */
  const lastInstance = new Map<string, number>();
  const routed = new Map<number, RouteRequest>();
  /** chain → its episodes not yet over; at 0 the chain's session is closed (policy.onChainsClosed). */
  const openEpisodes = new Map<string, number>();
  for (const ep of workload.episodes) openEpisodes.set(ep.chainId, (openEpisodes.get(ep.chainId) ?? 0) + 1);
  const gate = options.gate ? new KvGate<Released>(options.gate) : undefined;
  let held = 0;
  let routerWait = 0;
  /** Time of the earliest wake event pending (Infinity when none). */
  let nextWake = Infinity;
  let freed = false;
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

  /** A batch reaches the router; a gap it reveals is replayed when `replay`. */
  const deliver = (i: number, batch: KvEventBatch, now: number): void => {
    const result = kvIndex!.apply(engines[i]!.name, batch, now * 1000);
    if (!result.gap || !kv!.replay) return;
    for (let seq = result.gap.from; seq <= result.gap.to; seq++) {
      const lost = kvLost[i]!.get(seq);
      if (!lost) continue;
      kvLost[i]!.delete(seq);
      kvStats.replayed++;
      if (kv!.delayS > 0) heap.push(now + kv!.delayS, { kind: 'kv', instance: i, batch: lost });
      else deliver(i, lost, now);
    }
  };

  /** The engine's step changed its cache: its events go out as one batch. */
  const publish = (e: SimInstance, now: number): void => {
    const events = e.takeKvEvents();
    if (events.length === 0) return;
    const batch: KvEventBatch = { seq: kvSeq[e.index]!++, ts: now, events };
    kvStats.batches++;
    if (kv!.lossRate > 0 && kvRng() < kv!.lossRate) {
      kvStats.lost++;
      kvLost[e.index]!.set(batch.seq, batch);
    } else if (kv!.delayS > 0) heap.push(now + kv!.delayS, { kind: 'kv', instance: e.index, batch });
    else deliver(e.index, batch, now);
  };

  const advance = (e: SimInstance, now: number): ReturnType<SimInstance['advance']> => {
    const stepped = e.advance(now);
    if (kv) publish(e, now);
    return stepped;
  };

  const finish = (r: SimRequest, now: number): void => {
    const e = engines[r.instance]!;
    const req = routed.get(r.id)!;
    routed.delete(r.id);
    inFlightRequests[r.instance]!--;
    inFlightTokens[r.instance]! -= r.spec.promptTokens + r.spec.outputTokens;
    lookup.insert(e.name, r.spec.seq.slice(0, r.spec.kvBlocks), req.chainId);
    if (lookup instanceof EventsOrEstimate) lookup.ended(e.name, req.chainId);
    policy.onFinished?.(req, e.name);
    gate?.ended(req, e.name, now * 1000, r.spec.promptTokens + r.spec.outputTokens);
    latencies.push(now - r.released);
    outputTokens += r.spec.outputTokens;
    cachedTokens += r.cachedTokens;
    lastFinish = now;
    const ep = workload.episodes[r.episode]!;
    if (workload.kind === 'closed' && r.turn + 1 < ep.turns.length) {
      heap.push(now + ep.delays[r.turn]!, { kind: 'release', episode: r.episode, turn: r.turn + 1 });
    } else if (r.turn + 1 >= ep.turns.length) {
      const left = openEpisodes.get(ep.chainId)! - 1;
      openEpisodes.set(ep.chainId, left);
      if (left === 0) policy.onChainsClosed?.((chainId) => chainId === ep.chainId);
    }
  };

  /** Routes a released (or no longer held) call among `candidates` and sends it to its engine. */
  const dispatch = (request: RouteRequest, call: Released, candidates: InstanceView[], now: number): void => {
    const spec = workload.episodes[call.episode]!.turns[call.turn]!;
    const chainId = request.chainId;
    options.onRoute?.(request, lookup, (name) => engines.find((e) => e.name === name)!.cache.matchPrefix(request.blocks as readonly number[]));
    const decision = policy.route(request, candidates, lookup);
    const target = engines.findIndex((e) => e.name === decision.instance);
    if (target < 0 || !candidates.some((v) => v.name === decision.instance)) {
      throw new Error(`policy ${policy.name} chose ${decision.instance}, which it was not offered`);
    }
    gate?.placed(request, decision.instance);
    routerWait += now - call.released;
    const prev = lastInstance.get(chainId);
    if (prev !== undefined && prev !== target) {
      migrations++;
      forfeited += Math.max(0, engines[prev]!.cachedBlocks(spec) - engines[target]!.cachedBlocks(spec)) * bs;
    }
    lastInstance.set(chainId, target);
    lookup.insert(decision.instance, request.blocks, chainId);
    if (lookup instanceof EventsOrEstimate) lookup.placed(decision.instance, request.blocks, chainId);
    inFlightRequests[target]!++;
    inFlightTokens[target]! += spec.promptTokens + spec.outputTokens;
    const r: SimRequest = {
      id: nextId++,
      episode: call.episode,
      turn: call.turn,
      spec,
      released: call.released,
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
    if (!e.busy) schedule(e, advance(e, now).next);
    else schedule(e, e.interrupt(now));
  };

  for (let ev = heap.pop(); ev; ev = heap.pop()) {
    const now = ev.time;
    clockMs = now * 1000;
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
      const call: Released = { episode: item.episode, turn: item.turn, released: now };
      if (!gate) dispatch(request, call, views(), now);
      else {
        const candidates = gate.admissible(request, views(), now * 1000);
        if (candidates.length > 0) dispatch(request, call, candidates, now);
        else {
          gate.hold(request, now * 1000, call);
          held++;
        }
      }
    } else if (item.kind === 'wake') {
      if (item.at === nextWake) nextWake = Infinity;
    } else if (item.kind === 'kv') {
      deliver(item.instance, item.batch, now);
      continue;
    } else {
      const e = engines[item.instance]!;
      if (item.version !== e.version) continue;
      const { finished, next } = advance(e, now);
      for (const r of finished) finish(r, now);
      schedule(e, next);
      freed = finished.length > 0;
    }
    // Room appears only when a call ends or a deadline passes.
    if (gate && gate.waiting > 0 && (freed || item.kind === 'wake')) {
      freed = false;
      // The deadline itself on a wake-up: seconds → ms may round it to just before.
      const nowMs = item.kind === 'wake' ? Math.max(now * 1000, item.atMs) : now * 1000;
      gate.pump(nowMs, views, (c, candidates) => dispatch(c.request, c.payload, candidates, now));
      const deadline = gate.nextDeadline();
      if (deadline !== undefined && deadline / 1000 < nextWake) {
        nextWake = Math.max(now, deadline / 1000);
        heap.push(nextWake, { kind: 'wake', at: nextWake, atMs: deadline });
      }
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
    heldCalls: held,
    meanRouterWait: nextId > 0 ? routerWait / nextId : 0,
    ...(lookup instanceof EventsOrEstimate && { kvEvents: { ...kvStats, lookupsFromEvents: lookup.fromEvents, lookupsFromEstimate: lookup.fromEstimate } }),
  };
}
