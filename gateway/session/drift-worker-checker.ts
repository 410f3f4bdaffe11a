import { Worker } from 'node:worker_threads';
import type { CodecOptions } from '../codec/index.js';
import type { ChainReport } from '../../trajectory/index.js';
import type { DriftInput } from './drift.js';
import type { DriftChecker } from './drift-checker.js';

interface Pending {
  inputs: DriftInput[];
  resolve(reports: ChainReport[]): void;
  reject(error: unknown): void;
}

/**
 * Drift checks on a worker thread with a codec of its own, so that a closing session's re-render
 * and re-encode (a few ms of CPU for a 30k-token chain) do not stall the turns the gateway's event
 * loop is serving. If the thread cannot check (its codec does not load, it fails or exits), the
 * checks it had and every later one run on `fallback` instead, with one warning line: a close is
 * never lost to the thread.
 */
export class WorkerDriftChecker implements DriftChecker {
  private readonly pending = new Map<number, Pending>();
  /** Every check not yet answered, on the thread or the fallback: `close` waits for them. */
  private readonly outstanding = new Set<Promise<ChainReport[]>>();
  private nextId = 0;
  private failed = false;
  private closed = false;

  private constructor(
    private readonly worker: Worker,
    private readonly fallback: DriftChecker,
    private readonly log: (line: string) => void,
  ) {}

  /** Starts the thread; it loads the codec of `codecOptions` (the gateway's). */
  static start(codecOptions: CodecOptions, fallback: DriftChecker, log: (line: string) => void): WorkerDriftChecker {
    const worker = new Worker(new URL('./drift-worker.mjs', import.meta.url), { workerData: codecOptions });
    const checker = new WorkerDriftChecker(worker, fallback, log);
    worker.on('message', (m: { id: number; reports?: ChainReport[]; error?: string }) => checker.answered(m));
    worker.on('error', (error) => checker.fail(error.message));
    worker.on('exit', (code) => checker.fail(`the thread exited with ${code}`));
    // An idle thread must not keep its process alive; `check` refs it while a check is out.
    worker.unref();
    return checker;
  }

  check(inputs: DriftInput[]): Promise<ChainReport[]> {
    if (this.failed || this.closed || inputs.length === 0) return this.fallback.check(inputs);
    const id = this.nextId++;
    const check = new Promise<ChainReport[]>((resolve, reject) => {
      this.pending.set(id, { inputs, resolve, reject });
      this.worker.ref();
      // Copied, not transferred: the inputs stay whole for the fallback should the thread fail.
      this.worker.postMessage({ id, inputs });
    });
    this.outstanding.add(check);
    const done = () => this.outstanding.delete(check);
    check.then(done, done);
    return check;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled(this.outstanding);
    await this.worker.terminate();
  }

  private answered(message: { id: number; reports?: ChainReport[]; error?: string }): void {
    const request = this.pending.get(message.id);
    if (!request) return;
    this.settle(message.id);
    if (message.reports) request.resolve(message.reports);
    else this.fail(message.error ?? 'no reports', request);
  }

  /** From now on every check runs on the fallback, the ones the thread had (and `also`) included. */
  private fail(why: string, also?: Pending): void {
    // The thread stopped by `close`, which waited for every check first.
    if (this.closed && !also && this.pending.size === 0) return;
    const orphans = [...this.pending.values(), ...(also ? [also] : [])];
    this.pending.clear();
    this.worker.unref();
    if (!this.failed) {
      this.failed = true;
      this.log(`drift checks: the worker thread cannot check (${why}); checking on the event loop instead`);
      void this.worker.terminate();
    }
    for (const p of orphans) this.fallback.check(p.inputs).then(p.resolve, p.reject);
  }

  private settle(id: number): void {
    this.pending.delete(id);
    if (this.pending.size === 0) this.worker.unref();
  }
}
