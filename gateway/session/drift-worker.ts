import { parentPort, workerData } from 'node:worker_threads';
import { loadCodec, type CodecOptions } from '../codec/index.js';
import { driftReport, type DriftInput } from './drift.js';

/**
 * The drift worker thread's body: loads its own codec (the gateway's options) and answers each
 * request `{ id, inputs }` with `{ id, reports }` or `{ id, error }`. Started by WorkerDriftChecker.
 */
const port = parentPort!;
const codec = loadCodec(workerData as CodecOptions);
// A codec that does not load fails every request with its error: the checker then checks inline.
codec.catch(() => undefined);

port.on('message', (request: { id: number; inputs: DriftInput[] }) => {
  void (async () => {
    try {
      const loaded = await codec;
      port.postMessage({ id: request.id, reports: await Promise.all(request.inputs.map((input) => driftReport(loaded, input))) });
    } catch (error) {
      port.postMessage({ id: request.id, error: error instanceof Error ? error.message : String(error) });
    }
  })();
});
