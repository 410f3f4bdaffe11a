/**
 * Subscribes to one vLLM engine's KV events (`--kv-events-config` with the `zmq` publisher) and
 * hands them, in sequence order, to a sink. Batches missed (a sequence jump after a dropped link,
 * the batches published before the first one received) are asked for again on the engine's
 * replay socket; what cannot be replayed is reported as `lost`, as is a sequence that goes back
 * (the engine restarted, with an empty cache).
 */
import { Dealer, Subscriber } from 'zeromq';
import type { EngineKvEventBatch } from './engine-events.js';
import { decodeVllmMessage, KvWireError } from './vllm-wire.js';

/** Receives one engine's events. */
export interface KvEventSink {
  /** The next batch, in sequence order, none skipped since the last `batch` or `lost`. */
  batch(instance: string, batch: EngineKvEventBatch): void;
  /** Events were lost or the engine restarted (`reason` says which): forget what is known of the engine; later batches rebuild it. */
  lost(instance: string, reason: string): void;
}

export interface VllmKvEventFeedOptions {
  /** The engine instance's name, as the router knows it. */
  instance: string;
  /** The publisher's address, e.g. `tcp://10.0.0.5:5557`. */
  endpoint: string;
  /** The publisher's replay address, e.g. `tcp://10.0.0.5:5558`. Default none: lost batches are not asked for again. */
  replayEndpoint?: string;
  /** Topic prefix to subscribe to. Default `''` (every topic). */
  topic?: string;
  /** How long one replay may take before the lost batches count as lost, ms. Default 2,000. */
  replayTimeoutMs?: number;
  sink: KvEventSink;
  log: (line: string) => void;
}

/** Marks the end of a replay: vLLM sends sequence -1 with an empty payload. */
const END_OF_REPLAY = -1;

export class VllmKvEventFeed {
  private readonly subscriber = new Subscriber();
  private lastSeq = -1;
  private closed = false;
  private loop: Promise<void> | undefined;

  constructor(private readonly options: VllmKvEventFeedOptions) {}

  /** Connects and starts delivering batches (ZMQ reconnects by itself; the batches missed meanwhile are replayed). */
  start(): void {
    const { endpoint, topic = '' } = this.options;
    this.subscriber.connect(endpoint);
    this.subscriber.subscribe(topic);
    this.loop = this.receive();
  }

  /** Stops receiving; resolves once the receive loop has ended. */
  async close(): Promise<void> {
    this.closed = true;
    this.subscriber.close();
    await this.loop;
  }

  private async receive(): Promise<void> {
    const { instance, sink, log } = this.options;
    try {
      for await (const frames of this.subscriber) {
        let batch: EngineKvEventBatch;
        try {
          batch = decodeVllmMessage(frames);
        } catch (error) {
          if (!(error instanceof KvWireError)) throw error;
          sink.lost(instance, error.message);
          continue;
        }
        if (batch.seq <= this.lastSeq) {
          // One publisher's sequence only grows: the engine started again.
          sink.lost(instance, `the engine's KV event sequence went back from ${this.lastSeq} to ${batch.seq} (restarted)`);
          this.lastSeq = -1;
        }
        if (batch.seq > this.lastSeq + 1) await this.catchUp(batch.seq);
        sink.batch(instance, batch);
        this.lastSeq = batch.seq;
      }
    } catch (error) {
      if (!this.closed) log(`kv events of ${instance}: receiving stopped: ${(error as Error).message}`);
    }
  }

  /** Delivers batches `lastSeq + 1 .. before - 1` from the replay socket, or reports them lost. */
  private async catchUp(before: number): Promise<void> {
    const { instance, sink } = this.options;
    const from = this.lastSeq + 1;
    const missing = `KV event batches ${from}..${before - 1}`;
    if (!this.options.replayEndpoint) {
      sink.lost(instance, `${missing} missed (no replay endpoint)`);
      return;
    }
    try {
      for (const batch of await this.replay(from)) {
        if (batch.seq >= before) break;
        if (batch.seq !== this.lastSeq + 1) throw new KvWireError(`the replay skipped from ${this.lastSeq} to ${batch.seq}`);
        sink.batch(instance, batch);
        this.lastSeq = batch.seq;
      }
      if (this.lastSeq < before - 1) sink.lost(instance, `${missing} missed: the engine replayed up to ${this.lastSeq}`);
    } catch (error) {
      sink.lost(instance, `${missing} missed: replay failed: ${(error as Error).message}`);
    }
  }

  /** The batches the engine still holds from `from` on (vLLM keeps the last `buffer_steps`). */
  private async replay(from: number): Promise<EngineKvEventBatch[]> {
    const dealer = new Dealer({ receiveTimeout: this.options.replayTimeoutMs ?? 2_000, linger: 0 });
    try {
      dealer.connect(this.options.replayEndpoint!);
      const start = Buffer.alloc(8);
      start.writeBigInt64BE(BigInt(from));
      // The empty frame stands for the REQ envelope vLLM's ROUTER expects.
      await dealer.send([Buffer.alloc(0), start]);
      const batches: EngineKvEventBatch[] = [];
      for (;;) {
        // [envelope, topic, seq, payload]; the end is marked by sequence -1 and an empty payload.
        const [, topic, seq, payload] = await dealer.receive();
        if (!topic || !seq || !payload || seq.byteLength !== 8 || seq.readBigInt64BE(0) === BigInt(END_OF_REPLAY)) return batches;
        batches.push(decodeVllmMessage([topic, seq, payload]));
      }
    } finally {
      dealer.close();
    }
  }
}
