import type { ServerResponse } from 'node:http';
import type { AnthropicUsage, ContentBlockOut, StopReason } from './anthropic-output.js';
import { newToolUseId, thinkingSignature } from './anthropic-output.js';
import { EVENT_STREAM_HEADERS } from './sse.js';

/** How long the stream may stay silent (a long prefill) before a `ping` keeps the client waiting. */
const PING_INTERVAL_MS = 5_000;

type BlockKind = 'thinking' | 'text';

/**
 * Writes one Anthropic Messages answer as server-sent events, opening and closing content blocks
 * as the deltas change kind, so every `content_block_start` gets its deltas and its stop.
 */
export class AnthropicEventStream {
  private index = -1;
  private open: BlockKind | undefined;
  private thinking = '';
  /** Text already sent in text blocks, to complete it from the parsed turn at the end. */
  private text = '';
  private textBlocks = 0;
  private wrote = false;
  private readonly ping: NodeJS.Timeout;

  constructor(private readonly res: ServerResponse) {
    res.writeHead(200, EVENT_STREAM_HEADERS);
    this.ping = setInterval(() => {
      if (!this.wrote) this.event('ping', { type: 'ping' });
      this.wrote = false;
    }, PING_INTERVAL_MS);
  }

  get sentText(): string {
    return this.text;
  }

  event(type: string, data: object): void {
    this.wrote = true;
    this.res.write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  /** Appends to the open block of `kind`, first closing a block of the other kind. */
  delta(kind: BlockKind, text: string): void {
    if (!text) return;
    if (this.open !== kind) {
      this.closeBlock();
      this.startBlock(
        kind === 'thinking'
          ? { type: 'thinking', thinking: '', signature: '' }
          : { type: 'text', text: '' },
      );
      this.open = kind;
      if (kind === 'text') this.textBlocks += 1;
    }
    if (kind === 'thinking') {
      this.thinking += text;
      this.event('content_block_delta', {
        type: 'content_block_delta',
        index: this.index,
        delta: { type: 'thinking_delta', thinking: text },
      });
    } else {
      this.text += text;
      this.event('content_block_delta', {
        type: 'content_block_delta',
        index: this.index,
        delta: { type: 'text_delta', text },
      });
    }
  }

  /** A tool call as one block: its whole input JSON in a single `input_json_delta`. */
  toolUse(name: string, input: Record<string, unknown>): void {
    this.closeBlock();
    this.startBlock({ type: 'tool_use', id: newToolUseId(), name, input: {} });
    this.event('content_block_delta', {
      type: 'content_block_delta',
      index: this.index,
      delta: { type: 'input_json_delta', partial_json: JSON.stringify(input) },
    });
    this.event('content_block_stop', { type: 'content_block_stop', index: this.index });
  }

  /** An empty text block unless one was sent: an answer without tool calls always has text, as in the JSON answer. */
  ensureText(): void {
    if (this.textBlocks > 0) return;
    this.closeBlock();
    this.startBlock({ type: 'text', text: '' });
    this.event('content_block_stop', { type: 'content_block_stop', index: this.index });
  }

  /** Closes the open block, then `message_delta` and `message_stop`. */
  finish(stopReason: StopReason, usage: AnthropicUsage): void {
    this.closeBlock();
    this.event('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage,
    });
    this.event('message_stop', { type: 'message_stop' });
    this.end();
  }

  /** After the stream started the status is sent: the error goes out as an event. */
  fail(type: string, message: string): void {
    this.event('error', { type: 'error', error: { type, message } });
    this.end();
  }

  end(): void {
    clearInterval(this.ping);
    this.res.end();
  }

  private startBlock(block: ContentBlockOut): void {
    this.index += 1;
    this.event('content_block_start', {
      type: 'content_block_start',
      index: this.index,
      content_block: block,
    });
  }

  private closeBlock(): void {
    if (this.open === undefined) return;
    if (this.open === 'thinking') {
      this.event('content_block_delta', {
        type: 'content_block_delta',
        index: this.index,
        delta: { type: 'signature_delta', signature: thinkingSignature(this.thinking) },
      });
    }
    this.event('content_block_stop', { type: 'content_block_stop', index: this.index });
    this.open = undefined;
  }
}
