import { afterEach, describe, expect, it } from 'vitest';
import { Encoder } from '@msgpack/msgpack';
import { Publisher, Router as ZmqRouter } from 'zeromq';
import type { EngineKvEventBatch } from '../../../scheduler/kv-events/engine-events.js';
import { VllmKvEventFeed, type KvEventSink } from '../../../scheduler/kv-events/vllm-feed.js';
import { decodeVllmMessage, KvWireError } from '../../../scheduler/kv-events/vllm-wire.js';

/**
 * The feed against real ZMQ sockets speaking vLLM's wire format (kv_events.py): a PUB socket
 * publishing [topic, seq, msgpack batch] and a ROUTER answering replay requests as vLLM's
 * publisher (0.32) does. test/engines/ checks the same feed against a real vLLM.
 */

const encoder = new Encoder({ useBigInt64: true });

/** A batch as msgspec encodes KVEventBatch: [ts, [[tag, ...fields], ...], dp_rank]. */
function payload(events: unknown[]): Uint8Array {
  return encoder.encode([1_700_000_000.5, events, 0]);
}

function seqFrame(seq: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(BigInt(seq));
  return b;
}

const stored = (hashes: (bigint | Uint8Array)[], parent: bigint | null, tokens: number[]) => ['BlockStored', hashes, parent, tokens, 16, null, 'GPU'];

class RecordingSink {
  readonly batches: EngineKvEventBatch[] = [];
  readonly lost: string[] = [];
  private waiters: (() => void)[] = [];
  batch(_instance: string, batch: EngineKvEventBatch): void {
    this.batches.push(batch);
    for (const w of this.waiters.splice(0)) w();
  }
  lostEvents(reason: string): void {
    this.lost.push(reason);
  }
  /** Resolves once `n` batches arrived. */
  async until(n: number): Promise<void> {
    while (this.batches.length < n) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }
}

/** The sink interface bound to a recorder (so `lost` can stay a list). */
function sinkOf(recorder: RecordingSink): KvEventSink {
  return { batch: (i, b) => recorder.batch(i, b), lost: (_i, reason) => recorder.lostEvents(reason) };
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

function startFeed(endpoint: string, replayEndpoint: string | undefined, recorder: RecordingSink): VllmKvEventFeed {
  const feed = new VllmKvEventFeed({ instance: 'e0', endpoint, replayEndpoint, topic: 'kv', sink: sinkOf(recorder), log: () => {} });
  feed.start();
  closers.push(() => feed.close());
  return feed;
}

/**
 * Publishes batches 0, 1, ... until the subscriber has one (ZMQ drops what a subscriber not yet
 * connected misses), then waits for any in flight; returns the last sequence published.
 */
async function publishUntilReceived(pub: Awaited<ReturnType<typeof fakeVllmPublisher>>, recorder: RecordingSink, events: unknown[]): Promise<number> {
  let seq = -1;
  while (recorder.batches.length === 0) {
    await pub.publish(++seq, events);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  while (recorder.batches.at(-1)!.seq < seq) await recorder.until(recorder.batches.length + 1);
  return seq;
}

describe('vLLM KV event wire format', () => {
  it('decodes stored, removed and cleared events with 64-bit and byte hashes', () => {
    const hash = new Uint8Array([0xde, 0xad, 0xbe, 0xef]);
    const batch = decodeVllmMessage([
      Buffer.from('kv'),
      seqFrame(7),
      payload([stored([18446744073709551615n, hash], 12345678901234567n, [1, 2, 3]), ['BlockRemoved', [5n], 'GPU'], ['AllBlocksCleared']]),
    ]);
    expect(batch.seq).toBe(7);
    expect(batch.ts).toBe(1_700_000_000.5);
    expect(batch.events).toEqual([
      { kind: 'stored', hashes: ['18446744073709551615', 'deadbeef'], parent: '12345678901234567', tokenIds: [1, 2, 3], blockSize: 16 },
      { kind: 'removed', hashes: ['5'] },
      { kind: 'cleared' },
    ]);
  });

  it("reads vLLM 0.32's map-encoded events and drops other tiers' and remote blocks", () => {
    const batch = decodeVllmMessage([
      Buffer.from('kv'),
      seqFrame(0),
      payload([
        { type: 'BlockStored', block_hashes: [7n], parent_block_hash: null, token_ids: [4, 5], block_size: 2, lora_id: null, medium: 'GPU', lora_name: null },
        { type: 'BlockStored', block_hashes: [8n], parent_block_hash: 7n, token_ids: [6, 7], block_size: 2, lora_id: null, medium: 'CPU', lora_name: null },
        { type: 'BlockRemoved', block_hashes: [9n], medium: 'GPU', locality: 'REMOTE' },
        { type: 'BlockRemoved', block_hashes: [7n], medium: null },
      ]),
    ]);
    expect(batch.events).toEqual([
      { kind: 'stored', hashes: ['7'], parent: null, tokenIds: [4, 5], blockSize: 2 },
      { kind: 'removed', hashes: ['7'] },
    ]);
  });

  it('refuses malformed messages with a KvWireError', () => {
    expect(() => decodeVllmMessage([Buffer.from('kv'), seqFrame(1)])).toThrow(KvWireError);
    expect(() => decodeVllmMessage([Buffer.from('kv'), Buffer.alloc(4), payload([])])).toThrow(/8 bytes/);
    expect(() => decodeVllmMessage([Buffer.from('kv'), seqFrame(1), encoder.encode({ ts: 1 })])).toThrow(/\[ts, events/);
    expect(() => decodeVllmMessage([Buffer.from('kv'), seqFrame(1), payload([['BlockMoved', []]])])).toThrow(/unknown KV event "BlockMoved"/);
    expect(() => decodeVllmMessage([Buffer.from('kv'), seqFrame(1), payload([stored([1.5 as unknown as bigint], null, [1])])])).toThrow(/bytes or an integer/);
  });
});

describe('VllmKvEventFeed', () => {
  it('delivers batches in order and replays the ones a late subscriber and a lost link missed', async () => {
    const pub = await fakeVllmPublisher();
    const recorder = new RecordingSink();
    startFeed(pub.endpoint, pub.replayEndpoint, recorder);
    const last = await publishUntilReceived(pub, recorder, [stored([1n], null, [1])]);
    // The batches published before the first one received came from the replay socket.
    expect(recorder.batches.map((b) => b.seq)).toEqual(Array.from({ length: last + 1 }, (_, i) => i));
    await pub.publish(last + 1, [stored([2n], 1n, [2])], true);
    await pub.publish(last + 2, [['BlockRemoved', [1n], 'GPU']], true);
    await pub.publish(last + 3, [['AllBlocksCleared']]);
    await recorder.until(last + 4);
    expect(recorder.batches.map((b) => b.seq)).toEqual(Array.from({ length: last + 4 }, (_, i) => i));
    expect(recorder.batches.at(-2)!.events).toEqual([{ kind: 'removed', hashes: ['1'] }]);
    expect(recorder.lost).toEqual([]);
  });

  it('reports what it cannot replay as lost, and a sequence that goes back as a restart', async () => {
    const pub = await fakeVllmPublisher();
    const recorder = new RecordingSink();
    startFeed(pub.endpoint, undefined, recorder);
    const last = await publishUntilReceived(pub, recorder, [stored([1n], null, [1])]);
    const received = recorder.batches.length;
    await pub.publish(last + 1, [], true);
    await pub.publish(last + 2, [stored([3n], null, [3])]);
    await recorder.until(received + 1);
    expect(recorder.batches.at(-1)!.seq).toBe(last + 2);
    expect(recorder.lost.at(-1)).toBe(`KV event batches ${last + 1}..${last + 1} missed (no replay endpoint)`);
    await pub.publish(0, [stored([9n], null, [9])]);
    await recorder.until(received + 2);
    expect(recorder.batches.at(-1)!.seq).toBe(0);
    expect(recorder.lost.at(-1)).toBe(`the engine's KV event sequence went back from ${last + 2} to 0 (restarted)`);
  });
});
