import type Database from 'better-sqlite3';
import { Worker } from 'node:worker_threads';

/** How often the background thread checkpoints the WAL, ms. */
const CHECKPOINT_INTERVAL_MS = 1000;

/**
 * WAL checkpoints off the event loop. By default SQLite checkpoints inside the COMMIT that grows
 * the WAL past 1000 pages: it copies them into the database file and syncs it, which on this
 * project's machines took up to 650 ms of a stalled loop under a gateway's write load (a turn's
 * commit is otherwise well under a millisecond). The store's connection turns automatic
 * checkpoints off and a worker thread with its own connection runs a passive checkpoint every
 * second, which never blocks writers. If the thread fails, automatic checkpoints come back on, so
 * the WAL never grows without bound.
 */
export class BackgroundCheckpointer {
  private stopped = false;

  private constructor(
    private readonly worker: Worker,
    private readonly db: Database.Database,
  ) {}

  /** Starts checkpointing `file` (the database `db` has open) from a worker thread. */
  static start(db: Database.Database, file: string): BackgroundCheckpointer {
    // Restored as it was (SQLite's default, 1000 pages, unless set) if the thread fails.
    const autocheckpointPages = db.pragma('wal_autocheckpoint', { simple: true }) as number;
    db.pragma('wal_autocheckpoint = 0');
    const worker = new Worker(new URL('./sqlite-checkpoint-worker.mjs', import.meta.url), {
      workerData: { file, intervalMs: CHECKPOINT_INTERVAL_MS },
    });
    const checkpointer = new BackgroundCheckpointer(worker, db);
    const fallBack = (why: string) => {
      if (checkpointer.stopped || !db.open) return;
      checkpointer.stopped = true;
      db.pragma(`wal_autocheckpoint = ${autocheckpointPages}`);
      process.emitWarning(`${file}: background WAL checkpoints stopped (${why}); checkpointing on commit again`);
    };
    worker.on('message', (m: { error?: string }) => m.error && fallBack(m.error));
    worker.on('error', (error) => fallBack(error.message));
    worker.on('exit', (code) => fallBack(`the thread exited with ${code}`));
    // A store left open must not keep its process alive (after the listeners, which would ref it again).
    worker.unref();
    return checkpointer;
  }

  /** Stops the thread (it closes its connection first). */
  async close(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.postMessage('close');
    const timeout = setTimeout(() => void this.worker.terminate(), 5000);
    await exited;
    clearTimeout(timeout);
  }
}
