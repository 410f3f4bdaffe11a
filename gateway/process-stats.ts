import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

/** Event-loop delay in ms (beyond the sampling interval) over the window since the last reset. */
export interface LoopDelayStats {
  p50: number;
  p99: number;
  max: number;
  mean: number;
  /** Delay samples in the window (one per `resolution` ms the loop was free to take it). */
  samples: number;
}

/** What `GET /admin/v1/stats` reports about this gateway process. */
export interface ProcessStatsSnapshot {
  eventLoopDelayMs: LoopDelayStats;
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

/** This process's event-loop delay (sampled on a timer, so a blocked loop shows up) and memory. */
export class ProcessStats {
  private readonly delay: IntervalHistogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  private windowStart = performance.now();

  constructor() {
    this.delay.enable();
  }

  snapshot(): ProcessStatsSnapshot {
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
      memory: { rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers },
      cpuMs: { user: cpu.user / 1000, system: cpu.system / 1000 },
      windowMs: performance.now() - this.windowStart,
    };
  }

  /** Starts a new delay window. */
  reset(): void {
    this.delay.reset();
    this.windowStart = performance.now();
  }

  close(): void {
    this.delay.disable();
  }
}
