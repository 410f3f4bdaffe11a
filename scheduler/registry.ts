import type { InstanceConfig } from './instances.js';
import { scrapeEngineMetrics, type EngineMetrics } from './metrics-scraper.js';
import { probeHealth, type ProbeOutcome } from './probe.js';
import type { InstanceView } from './routing/types.js';

/** An engine instance as the registry knows it. */
export type RegisteredInstance = Omit<InstanceConfig, 'kvCapacityTokens'> & {
  /**
   * KV cache capacity in tokens. Default unbounded (Infinity): memory is then never a reason to
   * move work off the instance (gateways built without a capacity, e.g. in tests and benches).
   */
  kvCapacityTokens?: number;
};

export interface RegistryOptions {
  /** Interval between health checks (`GET /health`) of every instance, ms. Default 2,000. */
  healthIntervalMs?: number;
  /**
   * Consecutive failed health checks that take a healthy instance out. Timeouts alone never take
   * out the last healthy instance (a refused connection or an error answer does). Default 2.
   */
  unhealthyAfterFailures?: number;
  /** Interval between metrics scrapes (`GET /metrics`) of the healthy instances, ms. Default 1,000. */
  metricsIntervalMs?: number;
  /** Metrics older than this are ignored and the router's own in-flight accounting used instead, ms. Default 5,000. */
  metricsMaxAgeMs?: number;
  /** Timeout of one health check or metrics scrape, ms. Default 1,000. */
  probeTimeoutMs?: number;
  /**
   * A health check's timer firing this much later than due found the event loop stalled (the
   * answer may be unread in the socket): the check is given another `probeTimeoutMs` instead of
   * failing, ms. Default 100.
   */
  probeStallMs?: number;
  /**
   * Times one health check is extended for a stalled event loop; past them its timeout counts,
   * so a hung engine behind a stalled loop is failed after `(1 + this) x probeTimeoutMs` at least. Default 5.
   */
  probeStallExtensions?: number;
  /**
   * A health check or call that timed out within this long of the engine's last data on a
   * generation stream (`progressed`) does not count: the engine is answering, ms. Default 4,000
   * (twice the default `healthIntervalMs`).
   */
  streamGraceMs?: number;
  /** Clock in ms since the epoch (tests age metrics with it). Default `Date.now`. */
  now?: () => number;
}

export const REGISTRY_DEFAULTS = {
  healthIntervalMs: 2_000,
  unhealthyAfterFailures: 2,
  metricsIntervalMs: 1_000,
  metricsMaxAgeMs: 5_000,
  probeTimeoutMs: 1_000,
  probeStallMs: 100,
  probeStallExtensions: 5,
  streamGraceMs: 4_000,
} as const satisfies Required<Omit<RegistryOptions, 'now'>>;

/** One generation the router sent to an instance and that has not finished yet. */
export interface InFlightCall {
  readonly instance: string;
  /** Prompt + expected output tokens. */
  readonly tokens: number;
  readonly startedAt: number;
}

interface InstanceState {
  readonly config: RegisteredInstance;
  readonly capacity: number;
  healthy: boolean;
  /** Consecutive failed health checks. */
  failures: number;
  /** Of `failures`, those that were not timeouts (refused, reset, an error answer). */
  hardFailures: number;
  /** When the engine last delivered data on a generation stream; undefined before the first. */
  progressAt: number | undefined;
  /** Bumped when the instance is taken out, so a health check begun before that cannot revive it. */
  epoch: number;
  metrics: EngineMetrics | undefined;
  readonly inFlight: Set<InFlightCall>;
  checking: Promise<boolean> | undefined;
  /** Metrics scrapes under way (the timer skips an instance still being scraped). */
  scraping: number;
}

/**
 * The engine instances the router may use: their health (periodic `/health` checks, and failures
 * the router reports), their scraped metrics, and the router's own in-flight calls, combined into
 * the `InstanceView`s policies decide on. Instances start healthy: the first check or failed call
 * takes a dead one out, and a passing check brings it back.
 */
export class InstanceRegistry {
  private readonly states = new Map<string, InstanceState>();
  private readonly options: Required<RegistryOptions>;
  private readonly downListeners: ((instance: string) => void)[] = [];
  private timers: NodeJS.Timeout[] = [];
  /** Probes under way, awaited by `close`. */
  private readonly probes = new Set<Promise<unknown>>();

  constructor(instances: readonly RegisteredInstance[], options: RegistryOptions = {}) {
    if (instances.length === 0) throw new Error('the router needs at least one engine instance');
    this.options = { ...REGISTRY_DEFAULTS, now: Date.now, ...options };
    for (const config of instances) {
      if (this.states.has(config.name)) throw new Error(`engine instance ${config.name} is configured twice`);
      this.states.set(config.name, {
        config,
        capacity: config.kvCapacityTokens ?? Infinity,
        healthy: true,
        failures: 0,
        hardFailures: 0,
        progressAt: undefined,
        epoch: 0,
        metrics: undefined,
        inFlight: new Set(),
        checking: undefined,
        scraping: 0,
      });
    }
  }

  get names(): string[] {
    return [...this.states.keys()];
  }

  /** Starts the periodic health checks and metrics scrapes (timers do not keep the process alive). */
  start(): void {
    if (this.timers.length > 0) return;
    const health = () => void Promise.all(this.names.map((n) => this.checkHealth(n)));
    const scrape = () => void Promise.all([...this.states.values()].filter((s) => s.scraping === 0).map((s) => this.scrape(s.config.name)));
    health();
    scrape();
    this.timers = [setInterval(health, this.options.healthIntervalMs), setInterval(scrape, this.options.metricsIntervalMs)];
    for (const t of this.timers) t.unref();
  }

  /** Stops the timers and waits for probes under way. */
  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await Promise.allSettled(this.probes);
  }

  /** Called with an instance's name each time it is taken out. */
  onDown(listener: (instance: string) => void): void {
    this.downListeners.push(listener);
  }

  isHealthy(name: string): boolean {
    return this.state(name).healthy;
  }

  /** The latest metrics scraped from the instance, however old; undefined before the first. */
  metrics(name: string): EngineMetrics | undefined {
    return this.state(name).metrics;
  }

  /** Checks the instance's `/health` now (joining a check under way); resolves to its health after. */
  checkHealth(name: string): Promise<boolean> {
    const s = this.state(name);
    s.checking ??= this.track(this.probeHealth(s)).finally(() => (s.checking = undefined));
    return s.checking;
  }

  /**
   * Scrapes a healthy instance's `/metrics` now; a failed scrape keeps the old metrics. Not joined
   * with a scrape under way: that one was sent earlier and may predate what the caller just did.
   */
  async scrape(name: string): Promise<void> {
    const s = this.state(name);
    if (!s.healthy) return;
    const epoch = s.epoch;
    s.scraping += 1;
    try {
      const m = await this.track(scrapeEngineMetrics(s.config, this.options.probeTimeoutMs, this.options.now));
      // Scrapes may end out of order, and one begun before the instance was taken out is void.
      if (m && epoch === s.epoch && !(s.metrics && s.metrics.scrapedAt > m.scrapedAt)) s.metrics = m;
    } finally {
      s.scraping -= 1;
    }
  }

  /** One health check and, for the healthy, one scrape of every instance. */
  async refresh(): Promise<void> {
    await Promise.all(this.names.map((n) => this.checkHealth(n)));
    await Promise.all(this.names.map((n) => this.scrape(n)));
  }

  /**
   * Takes the instance out now (it failed a call); only a passing health check brings it back. A
   * call that `timedOut` (the engine was slow, not refusing or failing) takes out neither an
   * instance answering streams nor the last healthy one.
   */
  markDown(name: string, timedOut = false): void {
    const s = this.state(name);
    if (timedOut && !this.mayTimeOut(s)) return;
    this.takeOut(s);
  }

  /** The instance delivered data on a generation stream now: probe timeouts are not held against it for `streamGraceMs`. */
  progressed(name: string): void {
    this.state(name).progressAt = this.options.now();
  }

  /** Counts a call sent to the instance until `end`. */
  begin(name: string, tokens: number): InFlightCall {
    const call: InFlightCall = { instance: name, tokens, startedAt: this.options.now() };
    this.state(name).inFlight.add(call);
    return call;
  }

  end(call: InFlightCall): void {
    this.state(call.instance).inFlight.delete(call);
  }

  /** Every instance's view, healthy or not, in configuration order. */
  views(): InstanceView[] {
    return [...this.states.values()].map((s) => this.view(s));
  }

  private view(s: InstanceState): InstanceView {
    const now = this.options.now();
    const fresh = s.metrics && now - s.metrics.scrapedAt <= this.options.metricsMaxAgeMs ? s.metrics : undefined;
    let tokens = 0;
    // Calls sent since the scrape are not in the engine's numbers yet.
    let unseen = 0;
    for (const call of s.inFlight) {
      tokens += call.tokens;
      if (fresh && call.startedAt >= fresh.scrapedAt) unseen += call.tokens;
    }
    // An unbounded instance has no token count behind its usage fraction.
    const used = fresh && Number.isFinite(s.capacity) ? fresh.kvUsage * s.capacity + unseen : tokens;
    return {
      name: s.config.name,
      kvCapacityTokens: s.capacity,
      kvUsedTokens: Math.min(s.capacity, Math.round(used)),
      inFlightRequests: s.inFlight.size,
      inFlightTokens: tokens,
      queuedRequests: fresh?.waiting ?? 0,
      healthy: s.healthy,
    };
  }

  private track<T>(probe: Promise<T>): Promise<T> {
    this.probes.add(probe);
    void probe.finally(() => this.probes.delete(probe)).catch(() => {});
    return probe;
  }

  private async probeHealth(s: InstanceState): Promise<boolean> {
    const epoch = s.epoch;
    const outcome: ProbeOutcome = await probeHealth(`${s.config.url}/health`, {
      timeoutMs: this.options.probeTimeoutMs,
      stallMs: this.options.probeStallMs,
      maxExtensions: this.options.probeStallExtensions,
    });
    if (outcome === 'passed') {
      if (epoch === s.epoch) {
        s.failures = 0;
        s.hardFailures = 0;
        s.healthy = true;
      }
      return s.healthy;
    }
    if (outcome === 'timedOut' && this.answering(s)) return s.healthy;
    s.failures += 1;
    if (outcome === 'failed') s.hardFailures += 1;
    if (s.failures >= this.options.unhealthyAfterFailures && (s.hardFailures > 0 || this.mayTimeOut(s))) this.takeOut(s);
    return s.healthy;
  }

  private answering(s: InstanceState): boolean {
    return s.progressAt !== undefined && this.options.now() - s.progressAt <= this.options.streamGraceMs;
  }

  /** Whether timeouts alone may take the instance out: it answers no stream, and another instance is healthy. */
  private mayTimeOut(s: InstanceState): boolean {
    if (this.answering(s)) return false;
    for (const other of this.states.values()) if (other !== s && other.healthy) return true;
    return false;
  }

  private takeOut(s: InstanceState): void {
    s.epoch += 1;
    if (!s.healthy) return;
    s.healthy = false;
    // They describe an engine that may come back restarted and empty.
    s.metrics = undefined;
    for (const listener of this.downListeners) listener(s.config.name);
  }

  private state(name: string): InstanceState {
    const s = this.states.get(name);
    if (!s) throw new Error(`engine instance ${name} is not configured`);
    return s;
  }
}
