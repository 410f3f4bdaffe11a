/**
 * vLLM's KV-event wire format (`vllm/distributed/kv_events.py`, ZmqEventPublisher): each ZMQ
 * message has three frames — topic, the batch's sequence number as 8 big-endian bytes, and the
 * batch as msgpack: `[ts, events, data_parallel_rank?]` (msgspec's `array_like` struct), decoded
 * into the router's event form (routing/kv-event-index.ts, which keeps only the engine's own
 * tier). Fields newer vLLMs add are ignored; a malformed message is a `KvWireError`.
 */
import { Decoder } from '@msgpack/msgpack';
import type { EngineBlockHash, KvEvent, KvEventBatch } from '../routing/kv-event-index.js';

export class KvWireError extends Error {
  override name = 'KvWireError';
}

// 64-bit block hashes would lose precision as numbers.
const decoder = new Decoder({ useBigInt64: true });

/** One published message (its three frames) as a batch. */
export function decodeVllmMessage(frames: readonly Uint8Array[]): KvEventBatch {
  if (frames.length !== 3) throw new KvWireError(`a KV event message has 3 frames (topic, sequence, payload), got ${frames.length}`);
  const seqFrame = frames[1]!;
  if (seqFrame.byteLength !== 8) throw new KvWireError(`a KV event sequence number is 8 bytes, got ${seqFrame.byteLength}`);
  const seq = Number(new DataView(seqFrame.buffer, seqFrame.byteOffset, 8).getBigInt64(0));
  let batch: unknown;
  try {
    batch = decoder.decode(frames[2]!);
  } catch (error) {
    throw new KvWireError(`KV event batch ${seq} is not msgpack: ${(error as Error).message}`);
  }
  if (!Array.isArray(batch) || batch.length < 2 || !Array.isArray(batch[1])) throw new KvWireError(`KV event batch ${seq} is not [ts, events, ...]`);
  const events: KvEvent[] = [];
  for (const raw of batch[1] as unknown[]) {
    const event = decodeEvent(raw);
    if (event) events.push(event);
  }
  return { seq, ts: toNumber(batch[0], 'ts'), events };
}

/**
 * One event in either of msgspec's encodings of vLLM's tagged structs: a map with a `type` tag
 * (vLLM 0.32's `KVCacheEvent`) or an array `[tag, ...fields]` in field order (older vLLMs and
 * SGLang, `array_like`). Fields beyond the ones read are ignored.
 */
function decodeEvent(event: unknown): KvEvent | undefined {
  const fields = eventFields(event);
  // Blocks another engine holds (a KV connector's report) say nothing of this engine's cache.
  if (fields.locality === 'REMOTE') return undefined;
  const tier = { medium: optionalString(fields.medium, 'medium'), groupIdx: optionalNumber(fields.group_idx, 'group_idx') };
  switch (fields.type) {
    case 'BlockStored': {
      const { block_hashes, parent_block_hash, token_ids, block_size } = fields;
      if (!Array.isArray(token_ids) || !token_ids.every((t) => typeof t === 'number')) throw new KvWireError('BlockStored.token_ids is not a list of ids');
      return {
        type: 'BlockStored',
        blockHashes: hashList(block_hashes),
        parentBlockHash: parent_block_hash === null || parent_block_hash === undefined ? null : blockHash(parent_block_hash),
        tokenIds: token_ids,
        blockSize: toNumber(block_size, 'block_size'),
        ...tier,
      };
    }
    case 'BlockRemoved':
      return { type: 'BlockRemoved', blockHashes: hashList(fields.block_hashes), ...tier };
    case 'AllBlocksCleared':
      return { type: 'AllBlocksCleared' };
    default:
      throw new KvWireError(`unknown KV event ${JSON.stringify(fields.type)}`);
  }
}

/** Field names of the array encoding, in the structs' order (the fields read here come first in every version). */
const ARRAY_FIELDS: Record<string, string[]> = {
  BlockStored: ['block_hashes', 'parent_block_hash', 'token_ids', 'block_size', 'lora_id', 'medium'],
  BlockRemoved: ['block_hashes', 'medium'],
  AllBlocksCleared: [],
};

function eventFields(event: unknown): Record<string, unknown> & { type: unknown } {
  if (Array.isArray(event) && typeof event[0] === 'string') {
    const names = ARRAY_FIELDS[event[0]] ?? [];
    return { type: event[0], ...Object.fromEntries(names.map((name, i) => [name, event[i + 1]])) };
  }
  if (typeof event === 'object' && event !== null && 'type' in event) return event as Record<string, unknown> & { type: unknown };
  throw new KvWireError('a KV event is neither {type, ...fields} nor [tag, ...fields]');
}

function hashList(value: unknown): EngineBlockHash[] {
  if (!Array.isArray(value)) throw new KvWireError('block_hashes is not a list');
  return value.map(blockHash);
}

/** vLLM's ExternalBlockHash: bytes (hex here) or an integer (decimal here). */
function blockHash(value: unknown): EngineBlockHash {
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex');
  if (typeof value === 'bigint' || (typeof value === 'number' && Number.isInteger(value))) return value.toString();
  throw new KvWireError(`a block hash is bytes or an integer, got ${typeof value}`);
}

function optionalString(value: unknown, field: string): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'string') throw new KvWireError(`${field} is not a string`);
  return value;
}

function optionalNumber(value: unknown, field: string): number | null {
  return value === null || value === undefined ? null : toNumber(value, field);
}

function toNumber(value: unknown, field: string): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  throw new KvWireError(`${field} is not a number`);
}
