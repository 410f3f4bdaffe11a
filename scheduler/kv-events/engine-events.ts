/**
 * An engine's KV-cache events in one engine-neutral form: what vLLM publishes over ZMQ
 * (`vllm/distributed/kv_events.py`: BlockStored, BlockRemoved, AllBlocksCleared in numbered
 * batches) and what the simulator's engines publish. Engine block hashes are the engine's own
 * (vLLM: sha256 bytes or 64-bit integers), kept as opaque strings.
 */

/** An engine's hash of one of its blocks, as a string (hex of bytes, decimal of an integer). */
export type EngineBlockHash = string;

export type EngineKvEvent =
  /** Blocks now cached, in order: each block's parent is the one before it, the first's is `parent`. */
  | { kind: 'stored'; hashes: EngineBlockHash[]; parent: EngineBlockHash | null; tokenIds: number[]; blockSize: number }
  /** Blocks evicted (or freed without caching). */
  | { kind: 'removed'; hashes: EngineBlockHash[] }
  /** The whole cache was reset. */
  | { kind: 'cleared' };

export interface EngineKvEventBatch {
  /** The publisher's sequence number: consecutive batches differ by one; a jump is lost events. */
  seq: number;
  /** When the engine published it, seconds since the epoch. */
  ts: number;
  events: EngineKvEvent[];
}
