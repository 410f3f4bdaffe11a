// The background checkpointer's thread (sqlite-checkpointer.ts): its own connection to the store
// file, a passive WAL checkpoint every `intervalMs`. Plain JavaScript, so it loads in a worker
// thread whatever TypeScript loader the main thread was started with.
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';

const db = new Database(workerData.file);
const timer = setInterval(() => {
  try {
    // PASSIVE copies what no reader still needs and never waits for, or blocks, a writer.
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch (error) {
    // The store checkpoints on commit again once told; this thread is done.
    clearInterval(timer);
    db.close();
    parentPort.postMessage({ error: String(error) });
    parentPort.close();
  }
}, workerData.intervalMs);

parentPort.on('message', (message) => {
  if (message !== 'close') return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
