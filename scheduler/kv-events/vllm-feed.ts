/**
 * Subscribes to one engine's KV events (vLLM's `--kv-events-config` with the `zmq` publisher;
 * SGLang's speaks the same format) and applies them to the router's event index
 * (routing/kv-event-index.ts), which keeps the sequence: where it reports a gap (a dropped link,
 * the batches published before the subscription), the missed batches are asked for again on the
 * engine's replay socket. Until a gap is filled the index answers for that engine from the
 * router's estimate.
 */
import { Dealer, Subscriber } from 'zeromq';
import type { KvBatchResult, KvEventBatch } from '../routing/kv-event-index.js';
import type { KvEventSource } from '../instances.js';
import { decodeVllmMessage, KvWireError } from './vllm-wire.js';

export interface VllmKvEventFeedOptions {
  /** The engine instance's name, as the router knows it (log lines). */
  instance: string;
  /** Where it publishes: `endpoint` required. */
  source: KvEventSource & { endpoint: string };
  /** Applies one batch to the router's index (`Router.applyKvEvents` for this instance). */
  apply: (batch: KvEventBatch) => KvBatchResult;
  /** How long one replay may take before its batches count as missed, ms. Default 2,000. */
  replayTimeoutMs?: number;
  /** Where trouble is told (malformed messages, failed replays). Default `console.warn`. */
  log?: (line: string) => void;
}

/** Marks the end of a replay: vLLM sends sequence -1 with an empty payload. */
const END_OF_REPLAY = -1n;

export class VllmKvEventFeed {
  private readonly subscriber = new Subscriber();
  private readonly log: (line: string) => void;
  private closed = false;
  private seen = false;
  private loop: Promise<void> | undefined;

  constructor(private readonly options: VllmKvEventFeedOptions) {
    this.log = options.log ?? ((line) => console.warn(line));
  }

  /** Connects (ZMQ reconnects by itself) and starts applying batches. */
  start(): void {
    this.subscriber.connect(this.options.source.endpoint);
    this.subscriber.subscribe(this.options.source.topic ?? '');
    this.loop = this.receive();
  }

  /** Stops receiving; resolves once the receive loop has ended. */
  async close(): Promise<void> {
    this.closed = true;
    this.subscriber.close();
    await this.loop;
  }

  private async receive(): Promise<void> {
    const { instance } = this.options;
    try {
      for await (const frames of this.subscriber) {
        let batch: KvEventBatch;
        try {
          batch = decodeVllmMessage(frames);
        } catch (error) {
          if (!(error instanceof KvWireError)) throw error;
          this.log(`kv events of ${instance}: ${error.message}`);
          continue;
        }
        // The index trusts a feed whose first batch is the publisher's first: fetch the ones before it.
        if (!this.seen && batch.seq > 0) await this.replay(0, batch.seq - 1);
        this.seen = true;
        const result = this.options.apply(batch);
        if (result.gap) await this.replay(result.gap.from, result.gap.to);
      }
    } catch (error) {
      if (!this.closed) this.log(`kv events of ${instance}: receiving stopped: ${(error as Error).message}`);
    }
  }

  /** Applies batches `from..to` from the engine's replay socket (vLLM keeps its last `buffer_steps`). */
  private async replay(from: number, to: number): Promise<void> {
    const { instance, source } = this.options;
    if (!source.replayEndpoint) {
      this.log(`kv events of ${instance}: batches ${from}..${to} missed and no replay endpoint: the router estimates this engine's cache`);
      return;
    }
    const dealer = new Dealer({ receiveTimeout: this.options.replayTimeoutMs ?? 2_000, linger: 0 });
    try {
      dealer.connect(source.replayEndpoint);
      const start = Buffer.alloc(8);
      start.writeBigInt64BE(BigInt(from));
      // The empty frame stands for the REQ envelope vLLM's ROUTER expects.
      await dealer.send([Buffer.alloc(0), start]);
      for (;;) {
        // [envelope, topic, seq, payload]; the end is marked by sequence -1 and an empty payload.
        const [, topic, seq, payload] = await dealer.receive();
        if (!topic || !seq || !payload || seq.byteLength !== 8 || seq.readBigInt64BE(0) === END_OF_REPLAY) return;
        const batch = decodeVllmMessage([topic, seq, payload]);
        if (batch.seq > to) return;
        this.options.apply(batch);
      }
    } catch (error) {
      this.log(`kv events of ${instance}: replay of batches ${from}..${to} failed (${(error as Error).message}): the router estimates this engine's cache until its events are whole again`);
    } finally {
      dealer.close();
    }
  }
}
