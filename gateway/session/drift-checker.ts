import type { Codec } from '../codec/index.js';
import type { ChainReport } from '../../trajectory/index.js';
import { driftReport, type DriftInput } from './drift.js';

/**
 * Where a closing session's drift checks run. Each re-renders and re-encodes a chain's whole
 * history, milliseconds of CPU for a 30k-token chain: `inlineDriftChecker` runs them on the
 * caller's event loop, `WorkerDriftChecker` (drift-worker-checker.ts) on a thread of its own.
 */
export interface DriftChecker {
  /** The reports of `inputs`, in their order. */
  check(inputs: DriftInput[]): Promise<ChainReport[]>;
  /** Stops what it started; checks still running finish first. */
  close(): Promise<void>;
}

/** Drift checks on this thread, with the gateway's own codec. */
export function inlineDriftChecker(codec: Codec): DriftChecker {
  return {
    check: (inputs) => Promise.all(inputs.map((input) => driftReport(codec, input))),
    close: async () => undefined,
  };
}
