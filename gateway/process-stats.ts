import { createHistogram, monitorEventLoopDelay, type IntervalHistogram, type RecordableHistogram } from 'node:perf_hooks';
import type { TurnTimes } from './turn-timing.js';

/** Event-loop delay in ms (beyond the sampling interval) over the window since the last reset. */
export interface LoopDelayStats {
  p50: number;
  p99: number;
  max: number;
  mean: number;
  /** Delay samples in the window (one per `resolution` ms the loop was free to take it). */
  samples: number;
}

/** A latency distribution over the window, ms. */
export interface LatencyStats {
  p50: number;
  p99: number;
  max: number;
  count: number;
}

/** What `GET /admin/v1/stats` reports about this gateway process. */
export interface ProcessStatsSnapshot {
  eventLoopDelayMs: LoopDelayStats;
  /**
   * Per model request that generated (gateway/turn-timing.ts): `added` is its wall time in the
   * gateway less the engine's and the placement wait's; `engine` the engine's share.
   */
  turnMs: {
    added: LatencyStats;
    engine: LatencyStats;
    wait: LatencyStats;
    /** `added` by where it was spent (turn-timing.ts `AddedPhases`). */
    phases: { body: LatencyStats; beforeEngine: LatencyStats; afterEngine: LatencyStats };
  };
  /** `process.memoryUsage()` in bytes. */
  memory: { rss: number; heapUsed: number; heapTotal: number; external: number; arrayBuffers: number };
  /** `process.cpuUsage()` since the process started, in ms. */
  cpuMs: { user: number; system: number };
  /** Length of the window the delay covers, ms. */
  windowMs: number;
}

/** Milliseconds between delay samples: fine enough for the 10 ms lag the issue targets. */
const RESOLUTION_MS = 1;
/** The histogram records the time between samples, which includes the interval itself. */
const lagMs = (ns: number) => Math.max(0, ns / 1e6 - RESOLUTION_MS);

function latencyOf(h: RecordableHistogram): LatencyStats {
  const ms = (us: number) => us / 1000;
  return h.count > 0 ? { p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max), count: h.count } : { p50: 0, p99: 0, max: 0, count: 0 };
}

/**
 * This process's event-loop delay (sampled on a timer, so a blocked loop shows up) and memory.
 * The delay is sampled only from the first `snapshot()` or `reset()` on: its 1 ms timer wakes an
 * idle loop a thousand times a second (an idle gateway here used 25 ms of CPU a second with it,
 * 7 without), which a gateway nobody measures should not pay.
 */
export class ProcessStats {
  private readonly delay: IntervalHistogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  private readonly turns = { added: createHistogram(), engine: createHistogram(), wait: createHistogram() };
  private readonly phases = { body: createHistogram(), beforeEngine: createHistogram(), afterEngine: createHistogram() };
  private windowStart = performance.now();

  /** Starts sampling the delay unless it runs already (`enable()` says); the window starts then. */
  private sample(): void {
    if (this.delay.enable()) this.windowStart = performance.now();
  }

  /** Records one timed model request. */
  recordTurn(times: TurnTimes): void {
    // The histograms hold positive integers: microseconds, at least 1.
    const us = (ms: number) => Math.max(1, Math.round(ms * 1000));
    this.turns.added.record(us(times.addedMs));
    this.turns.engine.record(us(times.engineMs));
    this.turns.wait.record(us(times.waitMs));
    this.phases.body.record(us(times.phases.bodyMs));
    this.phases.beforeEngine.record(us(times.phases.beforeEngineMs));
    this.phases.afterEngine.record(us(times.phases.afterEngineMs));
  }

  snapshot(): ProcessStatsSnapshot {
    this.sample();
    const d = this.delay;
    const cpu = process.cpuUsage();
    const m = process.memoryUsage();
    return {
      eventLoopDelayMs: {
        // An empty histogram reports its sentinel values; a window with no samples had no delay.
        p50: d.count > 0 ? lagMs(d.percentile(50)) : 0,
        p99: d.count > 0 ? lagMs(d.percentile(99)) : 0,
        max: d.count > 0 ? lagMs(d.max) : 0,
        mean: d.count > 0 ? lagMs(d.mean) : 0,
        samples: d.count,
      },
      turnMs: {
        added: latencyOf(this.turns.added),
        engine: latencyOf(this.turns.engine),
        wait: latencyOf(this.turns.wait),
        phases: { body: latencyOf(this.phases.body), beforeEngine: latencyOf(this.phases.beforeEngine), afterEngine: latencyOf(this.phases.afterEngine) },
      },
      memory: { rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers },
      cpuMs: { user: cpu.user / 1000, system: cpu.system / 1000 },
      windowMs: performance.now() - this.windowStart,
    };
  }

  /** Starts a new delay window. */
  reset(): void {
    this.sample();
    this.delay.reset();
    for (const h of [...Object.values(this.turns), ...Object.values(this.phases)]) h.reset();
    this.windowStart = performance.now();
  }

  close(): void {
    this.delay.disable();
  }
}
