/**
 * Every Prometheus metric agent-rollout exports, on a registry passed in (never prom-client's
 * global one: tests and the roles of one process each choose theirs). Label values are bounded:
 * engine instance names, finish and reward reasons, sandbox operations, outcomes; never a session
 * or episode id. Hot paths use children bound once per label value.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Latency buckets (seconds) of the gateway's own share of a turn: its CPU budget is ~3 ms. */
const ADDED_BUCKETS = [0.0005, 0.001, 0.002, 0.003, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1];
/** Buckets (seconds) of an engine's generation, from a short answer to a long one. */
const ENGINE_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** Buckets (seconds) of a wait for KV memory, up to the router's 240 s hold limit. */
const WAIT_BUCKETS = [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 240];
/** Buckets (seconds) of a sandbox operation, from an exec of `true` to a large image's create. */
const SANDBOX_BUCKETS = [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export type SandboxOperation = 'create' | 'exec' | 'destroy';
const SANDBOX_OPERATIONS: readonly SandboxOperation[] = ['create', 'exec', 'destroy'];
/** Finish reasons of a generated turn as the gateway presents them. */
export type TurnFinish = 'stop' | 'tool_calls' | 'length';
const TURN_FINISHES: readonly TurnFinish[] = ['stop', 'tool_calls', 'length'];
/** Reward reasons (tasks/reward/result.ts `RewardReason`); any other value is counted as `other`. */
const REWARD_REASONS = ['resolved', 'unresolved', 'patch_failed', 'no_report', 'timeout', 'tampered', 'judge_unparseable', 'diff_rejected'] as const;
const EPISODE_OUTCOMES = ['ok', 'infra_error'] as const;

/** A labelled child per value of a bounded set, made on first use and kept. */
function children<T>(make: (value: string) => T): (value: string) => T {
  const made = new Map<string, T>();
  return (value) => {
    let child = made.get(value);
    if (!child) made.set(value, (child = make(value)));
    return child;
  };
}

/** The gateway's turns (gateway/session/turn-runner.ts) and their timing (gateway/turn-timing.ts). */
export class GatewayMetrics {
  private readonly turns: Record<TurnFinish, Counter.Internal>;
  private readonly promptTokens: Counter;
  private readonly sampledTokens: Counter;
  private readonly cachedTokens: Counter;
  private readonly added: Histogram;
  private readonly engine: Histogram;
  private readonly wait: Histogram;

  constructor(registers: Registry[]) {
    const turns = new Counter({ name: 'rollout_gateway_turns_total', help: 'Generated turns committed to the store, by finish reason.', labelNames: ['finish_reason'], registers });
    this.turns = Object.fromEntries(TURN_FINISHES.map((f) => [f, turns.labels(f)])) as Record<TurnFinish, Counter.Internal>;
    this.promptTokens = new Counter({ name: 'rollout_gateway_prompt_tokens_total', help: 'Prompt tokens of committed turns (tokens in).', registers });
    this.sampledTokens = new Counter({ name: 'rollout_gateway_sampled_tokens_total', help: 'Sampled tokens of committed turns, as stored (tokens out).', registers });
    this.cachedTokens = new Counter({ name: 'rollout_gateway_engine_cached_tokens_total', help: 'Prompt tokens of committed turns the engine reported served from its prefix cache.', registers });
    this.added = new Histogram({ name: 'rollout_gateway_added_latency_seconds', help: "A generating request's wall time in the gateway less the engine's share and the placement wait.", buckets: ADDED_BUCKETS, registers });
    this.engine = new Histogram({ name: 'rollout_gateway_engine_latency_seconds', help: "A generating request's time in the engine, over every attempt.", buckets: ENGINE_BUCKETS, registers });
    this.wait = new Histogram({ name: 'rollout_gateway_placement_wait_seconds', help: "A generating request's wait for a placement (KV admission, held calls).", buckets: WAIT_BUCKETS, registers });
  }

  /** One turn committed to the store. */
  turn(finish: TurnFinish, promptTokens: number, sampledTokens: number, cachedTokens: number): void {
    this.turns[finish].inc();
    this.promptTokens.inc(promptTokens);
    this.sampledTokens.inc(sampledTokens);
    if (cachedTokens > 0) this.cachedTokens.inc(cachedTokens);
  }

  /** One timed request (gateway/turn-timing.ts), in ms. */
  timed(addedMs: number, engineMs: number, waitMs: number): void {
    this.added.observe(Math.max(0, addedMs) / 1000);
    this.engine.observe(engineMs / 1000);
    this.wait.observe(waitMs / 1000);
  }
}

/** One engine as the router sees it: its health, and what its latest `/metrics` scrape said. */
export interface EngineState {
  instance: string;
  healthy: boolean;
  /** 0..1; undefined when the engine reports none. */
  prefixHitRate: number | undefined;
  /** 0..1; undefined before a scrape. */
  kvUsage: number | undefined;
}

/** The router's placements (scheduler/router.ts) and its view of engine health (scheduler/registry.ts). */
export class RouterMetrics {
  private readonly decisions: (instance: string) => Counter.Internal;
  private readonly migrations: (instance: string) => Counter.Internal;
  private readonly failovers: Counter;
  private readonly routedPrompt: Counter;
  private readonly expectedCached: Counter;
  private readonly held: Gauge;
  private readonly heldTotal: Counter;
  private readonly heldWait: Histogram;
  /** The engines as the router sees them, read when scraped. */
  private engineSource: (() => Iterable<EngineState>) | undefined;
  private readonly down: (instance: string) => Counter.Internal;

  constructor(registers: Registry[]) {
    const decisions = new Counter({ name: 'rollout_router_decisions_total', help: 'Calls placed on an engine instance (first placements and failovers).', labelNames: ['instance'], registers });
    this.decisions = children((i) => decisions.labels(i));
    const migrations = new Counter({ name: 'rollout_router_migrations_total', help: "Calls placed away from their episode's home instance, by the instance they went to.", labelNames: ['instance'], registers });
    this.migrations = children((i) => migrations.labels(i));
    this.failovers = new Counter({ name: 'rollout_router_failovers_total', help: 'Calls placed again elsewhere after an engine failed before answering.', registers });
    this.routedPrompt = new Counter({ name: 'rollout_router_prompt_tokens_total', help: 'Prompt tokens of placed calls.', registers });
    this.expectedCached = new Counter({ name: 'rollout_router_expected_cached_tokens_total', help: "Prompt tokens of placed calls the prefix index expected in the chosen instance's cache.", registers });
    this.held = new Gauge({ name: 'rollout_router_held_calls', help: 'Calls waiting now for KV memory on some instance.', registers });
    this.heldTotal = new Counter({ name: 'rollout_router_held_calls_total', help: 'Calls that had to wait for KV memory.', registers });
    this.heldWait = new Histogram({ name: 'rollout_router_held_wait_seconds', help: 'How long a held call waited, placed or not.', buckets: WAIT_BUCKETS, registers });
    const read = () => this.engineSource?.() ?? [];
    const engineGauge = (name: string, help: string, value: (engine: EngineState) => number | undefined) =>
      new Gauge({
        name,
        help,
        labelNames: ['instance'],
        registers,
        collect() {
          // An engine that stopped reporting a figure shows none, not its last one.
          this.reset();
          for (const engine of read()) {
            const v = value(engine);
            if (v !== undefined) this.labels(engine.instance).set(v);
          }
        },
      });
    engineGauge('rollout_engine_healthy', 'Whether the router places calls on the engine instance (1) or has taken it out (0).', (e) => (e.healthy ? 1 : 0));
    engineGauge('rollout_engine_prefix_cache_hit_ratio', "The engine's prefix-cache hit rate as it reports it (vLLM: over its lifetime; SGLang: its recent window).", (e) => e.prefixHitRate);
    engineGauge('rollout_engine_kv_cache_usage_ratio', "Share of the engine's KV cache in use, as it reports it.", (e) => e.kvUsage);
    const down = new Counter({ name: 'rollout_engine_taken_out_total', help: 'Times the router took an engine instance out (failed health checks or calls).', labelNames: ['instance'], registers });
    this.down = children((i) => down.labels(i));
  }

  /** A call placed on `instance`; `migrated` when it had a home instance and went elsewhere. */
  placed(instance: string, promptTokens: number, expectedCachedTokens: number, migrated: boolean): void {
    this.decisions(instance).inc();
    if (migrated) this.migrations(instance).inc();
    this.routedPrompt.inc(promptTokens);
    if (expectedCachedTokens > 0) this.expectedCached.inc(expectedCachedTokens);
  }

  failover(): void {
    this.failovers.inc();
  }

  /** A call starts waiting for KV memory; the answer ends its wait (once) with its duration in ms. */
  hold(): (waitedMs: number) => void {
    this.held.inc();
    this.heldTotal.inc();
    let ended = false;
    return (waitedMs) => {
      if (ended) return;
      ended = true;
      this.held.dec();
      this.heldWait.observe(waitedMs / 1000);
    };
  }

  /** Where the `rollout_engine_…` gauges read the engines at each scrape (the process's router). */
  watchEngines(source: () => Iterable<EngineState>): void {
    this.engineSource = source;
  }

  takenOut(instance: string): void {
    this.down(instance).inc();
  }
}

/** Sandbox operations of a worker (sandbox/metered.ts). */
export class SandboxMetrics {
  private readonly seconds: Record<SandboxOperation, Histogram.Internal<string>>;
  private readonly failures: Record<SandboxOperation, Counter.Internal>;

  constructor(registers: Registry[]) {
    const seconds = new Histogram({ name: 'rollout_sandbox_operation_seconds', help: 'Duration of sandbox create, exec and destroy calls, failed or not.', labelNames: ['operation'], buckets: SANDBOX_BUCKETS, registers });
    const failures = new Counter({ name: 'rollout_sandbox_failures_total', help: 'Sandbox create, exec and destroy calls that threw.', labelNames: ['operation'], registers });
    this.seconds = Object.fromEntries(SANDBOX_OPERATIONS.map((o) => [o, seconds.labels(o)])) as Record<SandboxOperation, Histogram.Internal<string>>;
    this.failures = Object.fromEntries(SANDBOX_OPERATIONS.map((o) => [o, failures.labels(o)])) as Record<SandboxOperation, Counter.Internal>;
  }

  /** One operation that took `ms` and threw (`failed`) or not. */
  observe(operation: SandboxOperation, ms: number, failed: boolean): void {
    this.seconds[operation].observe(ms / 1000);
    if (failed) this.failures[operation].inc();
  }
}

/** Episodes a worker finished, their rewards, and the episodes waiting for admission. */
export class EpisodeMetrics {
  private readonly episodes: Counter;
  private readonly rewards: Counter;
  private readonly rewardValue: Histogram;
  private readonly waiting: Gauge;

  constructor(registers: Registry[]) {
    this.episodes = new Counter({ name: 'rollout_episodes_total', help: 'Episodes recorded in the store, by outcome.', labelNames: ['outcome'], registers });
    for (const outcome of EPISODE_OUTCOMES) this.episodes.labels(outcome);
    this.rewards = new Counter({ name: 'rollout_rewards_total', help: 'Rewards computed, by whether the task was resolved and the reason.', labelNames: ['resolved', 'reason'], registers });
    this.rewardValue = new Histogram({ name: 'rollout_reward_value', help: 'Rewards computed (tests: 0 or 1; scripts and judges: in [0, 1]).', buckets: [0, 0.1, 0.25, 0.5, 0.75, 0.9, 1], registers });
    this.waiting = new Gauge({ name: 'rollout_admission_waiting_episodes', help: "Episodes this worker's admission activities hold waiting for a free engine slot.", registers });
  }

  episode(outcome: (typeof EPISODE_OUTCOMES)[number]): void {
    this.episodes.labels(outcome).inc();
  }

  reward(reward: number, resolved: boolean, reason: string): void {
    const known = (REWARD_REASONS as readonly string[]).includes(reason) ? reason : 'other';
    this.rewards.labels(String(resolved), known).inc();
    this.rewardValue.observe(reward);
  }

  /** An episode starts waiting for admission; the answer ends its wait (once). */
  admissionWait(): () => void {
    this.waiting.inc();
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.waiting.dec();
    };
  }
}

/** Every metric of one process, whichever roles it runs, on one registry. */
export interface RolloutMetrics {
  readonly registry: Registry;
  readonly gateway: GatewayMetrics;
  readonly router: RouterMetrics;
  readonly sandbox: SandboxMetrics;
  readonly episodes: EpisodeMetrics;
}

/**
 * Defines every metric on `registry` (default: a new one of the caller's own), and with
 * `processMetrics` (default true) Node's default process metrics (`process_…`, `nodejs_…`);
 * metrics nothing exposes go without them.
 */
export function createMetrics(registry: Registry = new Registry(), options: { processMetrics?: boolean } = {}): RolloutMetrics {
  const registers = [registry];
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry });
  return {
    registry,
    gateway: new GatewayMetrics(registers),
    router: new RouterMetrics(registers),
    sandbox: new SandboxMetrics(registers),
    episodes: new EpisodeMetrics(registers),
  };
}
