import { afterEach, describe, expect, it } from 'vitest';
import { Encoder } from '@msgpack/msgpack';
import { Publisher, Router as ZmqRouter } from 'zeromq';
import { KvEventIndex, type KvEventBatch } from '../../../scheduler/routing/kv-event-index.js';
import { VllmKvEventFeed } from '../../../scheduler/kv-events/vllm-feed.js';
import { decodeVllmMessage, KvWireError } from '../../../scheduler/kv-events/vllm-wire.js';
import { blockHashes } from '../../../scheduler/routing/block-hash.js';

/**
 * The feed against real ZMQ sockets speaking vLLM's wire format (kv_events.py): a PUB socket
 * publishing [topic, seq, msgpack batch] and a ROUTER answering replay requests as vLLM's
 * publisher (0.32) does, applying to a real KvEventIndex. test/engines/ checks the same feed
 * against a real vLLM.
 */

const encoder = new Encoder({ useBigInt64: true });

/** A batch as msgspec encodes KVEventBatch: [ts, [event, ...], dp_rank]. */
function payload(events: unknown[]): Uint8Array {
  return encoder.encode([1_700_000_000.5, events, 0]);
}

function seqFrame(seq: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(BigInt(seq));
  return b;
}

/** Engine blocks of 64 tokens (our block size): `tokens` 64 per hash. */
const stored = (hashes: bigint[], parent: bigint | null, tokens: number[]) => ({ type: 'BlockStored', block_hashes: hashes, parent_block_hash: parent, token_ids: tokens, block_size: 64, lora_id: null, medium: 'GPU' });
const tokensOf = (block: number) => Array.from({ length: 64 }, (_, i) => block * 1000 + i);

/** The index the feed applies to, and the sequence numbers it was given in order. */
function recordingIndex() {
  const index = new KvEventIndex(64);
  const applied: number[] = [];
  const waiters: (() => void)[] = [];
  return {
    index,
    applied,
    apply(batch: KvEventBatch) {
      applied.push(batch.seq);
      for (const w of waiters.splice(0)) w();
      return index.apply('e0', batch, Date.now());
    },
    /** Resolves once batch `seq` was applied. */
    async until(seq: number) {
      while (!applied.includes(seq)) await new Promise<void>((resolve) => waiters.push(resolve));
    },
  };
}

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A publisher and a replay server holding every batch sent, on free ports. */
async function fakeVllmPublisher() {
  const pub = new Publisher();
  await pub.bind('tcp://127.0.0.1:*');
  const replay = new ZmqRouter();
  await replay.bind('tcp://127.0.0.1:*');
  const sent = new Map<number, Uint8Array>();
  let serving = true;
  void (async () => {
    try {
      for await (const [client, , start] of replay) {
        const from = Number(start!.readBigInt64BE(0));
        for (const [seq, body] of [...sent].sort((a, b) => a[0] - b[0])) if (seq >= from) await replay.send([client!, Buffer.alloc(0), Buffer.from('kv'), seqFrame(seq), body]);
        await replay.send([client!, Buffer.alloc(0), Buffer.alloc(0), seqFrame(-1), Buffer.alloc(0)]);
      }
    } catch (error) {
      if (serving) throw error;
    }
  })();
  closers.push(() => {
    serving = false;
    pub.close();
    replay.close();
  });
  return {
    endpoint: pub.lastEndpoint!,
    replayEndpoint: replay.lastEndpoint!,
    /** Records the batch for replay; publishes it unless `drop`. */
    async publish(seq: number, events: unknown[], drop = false) {
      const body = payload(events);
      sent.set(seq, body);
      if (!drop) await pub.send(['kv', seqFrame(seq), body]);
    },
  };
}

function startFeed(endpoint: string, replayEndpoint: string | undefined, recorder: ReturnType<typeof recordingIndex>, log: string[] = []): VllmKvEventFeed {
  const feed = new VllmKvEventFeed({ instance: 'e0', source: { endpoint, replayEndpoint, topic: 'kv' }, apply: (b) => recorder.apply(b), log: (line) => log.push(line) });
  feed.start();
  closers.push(() => feed.close());
  return feed;
}

/**
 * Publishes batches `from`, `from` + 1, ... (each storing block n) until the subscriber has one (ZMQ drops what a
 * subscriber not yet connected misses), then waits for any in flight; returns the last sequence.
 */
async function publishUntilReceived(pub: Awaited<ReturnType<typeof fakeVllmPublisher>>, recorder: ReturnType<typeof recordingIndex>, from = 0): Promise<number> {
  let seq = from - 1;
  while (recorder.applied.length === 0) {
    seq++;
    await pub.publish(seq, [stored([BigInt(seq + 1)], seq === 0 ? null : BigInt(seq), tokensOf(seq))]);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await recorder.until(seq);
  return seq;
}

/** Our hashes of the chain of blocks 0..n-1 the publisher stored. */
const ours = (n: number) => blockHashes(Array.from({ length: n }, (_, b) => tokensOf(b)).flat(), 64);

describe('vLLM KV event wire format', () => {
  it('decodes stored, removed and cleared events with 64-bit and byte hashes', () => {
    const hash = new Uint8Array([0xde, 0xad, 0xbe, 0xef]);
    const batch = decodeVllmMessage([
      Buffer.from('kv'),
      seqFrame(7),
      payload([['BlockStored', [18446744073709551615n, hash], 12345678901234567n, [1, 2, 3], 16, null, 'GPU'], ['BlockRemoved', [5n], 'GPU'], ['AllBlocksCleared']]),
    ]);
    expect(batch.seq).toBe(7);
    expect(batch.ts).toBe(1_700_000_000.5);
    expect(batch.events).toEqual([
      { type: 'BlockStored', blockHashes: ['18446744073709551615', 'deadbeef'], parentBlockHash: '12345678901234567', tokenIds: [1, 2, 3], blockSize: 16, medium: 'GPU', groupIdx: null },
      { type: 'BlockRemoved', blockHashes: ['5'], medium: 'GPU', groupIdx: null },
      { type: 'AllBlocksCleared' },
    ]);
  });

  it("reads vLLM 0.32's map-encoded events and drops blocks another engine holds", () => {
    const batch = decodeVllmMessage([
      Buffer.from('kv'),
      seqFrame(0),
      payload([
        { type: 'BlockStored', block_hashes: [7n], parent_block_hash: null, token_ids: [4, 5], block_size: 2, lora_id: null, medium: 'CPU', lora_name: null, group_idx: 0 },
        { type: 'BlockRemoved', block_hashes: [9n], medium: 'GPU', locality: 'REMOTE' },
        { type: 'BlockRemoved', block_hashes: [7n], medium: null },
      ]),
    ]);
    expect(batch.events).toEqual([
      { type: 'BlockStored', blockHashes: ['7'], parentBlockHash: null, tokenIds: [4, 5], blockSize: 2, medium: 'CPU', groupIdx: 0 },
      { type: 'BlockRemoved', blockHashes: ['7'], medium: null, groupIdx: null },
    ]);
  });

  it('refuses malformed messages with a KvWireError', () => {
    expect(() => decodeVllmMessage([Buffer.from('kv'), seqFrame(1)])).toThrow(KvWireError);
    expect(() => decodeVllmMessage([Buffer.from('kv'), Buffer.alloc(4), payload([])])).toThrow(/8 bytes/);
    expect(() => decodeVllmMessage([Buffer.from('kv'), seqFrame(1), encoder.encode({ ts: 1 })])).toThrow(/\[ts, events/);
    expect(() => decodeVllmMessage([Buffer.from('kv'), seqFrame(1), payload([{ type: 'BlockMoved' }])])).toThrow(/unknown KV event "BlockMoved"/);
    expect(() => decodeVllmMessage([Buffer.from('kv'), seqFrame(1), payload([stored([1.5 as unknown as bigint], null, [1])])])).toThrow(/bytes or an integer/);
  });
});

describe('VllmKvEventFeed', () => {
  it('replays what a late subscriber and a lost link missed, so the index is whole and live', async () => {
    const pub = await fakeVllmPublisher();
    const recorder = recordingIndex();
    const log: string[] = [];
    startFeed(pub.endpoint, pub.replayEndpoint, recorder, log);
    const last = await publishUntilReceived(pub, recorder);
    // The batches published before the first one received came from the replay socket, first.
    expect(recorder.applied.slice(0, last + 1)).toEqual(Array.from({ length: last + 1 }, (_, i) => i));
    for (let seq = last + 1; seq <= last + 3; seq++) await pub.publish(seq, [stored([BigInt(seq + 1)], BigInt(seq), tokensOf(seq))], seq < last + 3);
    await recorder.until(last + 2);
    const blocks = last + 4;
    expect(recorder.index.isLive('e0', Date.now())).toBe(true);
    expect(recorder.index.matchedBlocks('e0', ours(blocks))).toBe(blocks);
    await pub.publish(last + 4, [{ type: 'BlockRemoved', block_hashes: [BigInt(blocks)], medium: 'GPU' }]);
    await recorder.until(last + 4);
    expect(recorder.index.matchedBlocks('e0', ours(blocks))).toBe(blocks - 1);
    expect(log).toEqual([]);
  });

  it('without a replay socket a late subscriber is not trusted: the index says the estimate answers', async () => {
    const pub = await fakeVllmPublisher();
    const recorder = recordingIndex();
    const log: string[] = [];
    // Published before anyone subscribed: no subscriber can have it.
    await pub.publish(0, [stored([1n], null, tokensOf(0))], true);
    startFeed(pub.endpoint, undefined, recorder, log);
    const last = await publishUntilReceived(pub, recorder, 1);
    expect(recorder.index.isLive('e0', Date.now())).toBe(false);
    expect(log[0]).toMatch(new RegExp(`batches 0\\.\\.${recorder.applied[0]! - 1} missed and no replay endpoint`));
    // An engine restart (its sequence back at 0, cache empty) makes the feed whole again.
    await pub.publish(0, [stored([1n], null, tokensOf(0))]);
    await recorder.until(0);
    expect(recorder.applied.at(-1)).toBe(0);
    expect(recorder.applied.length).toBeLessThanOrEqual(last + 1);
    expect(recorder.index.isLive('e0', Date.now())).toBe(true);
    expect(recorder.index.matchedBlocks('e0', ours(3))).toBe(1);
  });
});
