import { IncrementalDecoder } from './incremental-decode.js';
import type { TextTokenizer } from './tokenizer.js';

/** Text deltas of a turn being generated, split the way the protocols stream them. */
export interface StreamDelta {
  reasoning: string;
  content: string;
}

const THINK_OPEN = '<think>';
const THINK_CLOSE = '</think>';
const CALL_OPEN = '<tool_call>';

/** Length of the longest suffix of `text` that is a proper prefix of `tag` (held back: it may grow into the tag). */
function partialTagLength(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) {
    if (text.endsWith(tag.slice(0, n))) return n;
  }
  return 0;
}

/** The text without the line breaks its part begins with, unless the part has `begun`. */
function afterLeadingBreaks(text: string, begun: boolean): string {
  return begun ? text : text.replace(/^\n+/, '');
}

/**
 * Where the turn's text is: before its first characters say whether it opens `<think>`, in the
 * reasoning, in the content, or past the first `<tool_call>` (nothing more is streamed).
 */
type Phase = 'start' | 'reasoning' | 'content' | 'call';

export interface StreamSplitterOptions {
  /**
   * The generation prompt already opened `<think>` (thinking templates), so the turn begins as
   * reasoning without sampling the tag. Default false.
   */
  startsInReasoning?: boolean;
  /**
   * The reply presents no calls (a request without tools, or `tool_choice: "none"`), so call text
   * is content and streams as it comes instead of being held back. Default false.
   */
  callsAsContent?: boolean;
}

/**
 * Turns sampled ids into reasoning and content deltas as they arrive. Text inside `<think>` is
 * reasoning; text after it is content until the first `<tool_call>`, whose calls are returned
 * whole once the turn is parsed (unless `callsAsContent`). Leading line breaks of each part are
 * dropped. Each push costs what its new ids add: the ids are decoded incrementally and only the
 * new text is scanned (with a possible partial tag held back), so a 30k-token answer does not cost
 * O(n²).
 */
export class StreamSplitter {
  private readonly decoder: IncrementalDecoder;
  private phase: Phase = 'start';
  /** Text not yet placed: the start before it is known to open `<think>`, or a possible partial tag. */
  private held = '';
  /** Whether a character other than a line break was streamed, per part. */
  private reasoningBegun = false;
  private contentBegun = false;
  private readonly callsAsContent: boolean;

  constructor(
    tokenizer: Pick<TextTokenizer, 'decode'>,
    private readonly endOfTurnId: number,
    options: StreamSplitterOptions = {},
  ) {
    this.decoder = new IncrementalDecoder(tokenizer);
    if (options.startsInReasoning) this.held = THINK_OPEN;
    this.callsAsContent = options.callsAsContent ?? false;
  }

  push(ids: number[]): StreamDelta {
    const delta: StreamDelta = { reasoning: '', content: '' };
    if (this.phase === 'call') return delta;
    let text = this.held + this.decoder.push(ids.filter((id) => id !== this.endOfTurnId));
    this.held = '';
    if (this.phase === 'start') {
      const start = text.trimStart();
      if (start.length < THINK_OPEN.length && THINK_OPEN.startsWith(start)) {
        this.held = text;
        return delta;
      }
      this.phase = start.startsWith(THINK_OPEN) ? 'reasoning' : 'content';
      if (this.phase === 'reasoning') text = start.slice(THINK_OPEN.length);
    }
    if (this.phase === 'reasoning') {
      const close = text.indexOf(THINK_CLOSE);
      const end = close >= 0 ? close : text.length - partialTagLength(text, THINK_CLOSE);
      delta.reasoning = afterLeadingBreaks(text.slice(0, end), this.reasoningBegun);
      this.reasoningBegun ||= delta.reasoning.length > 0;
      if (close < 0) {
        this.held = text.slice(end);
        return delta;
      }
      this.phase = 'content';
      text = text.slice(close + THINK_CLOSE.length);
    }
    const call = this.callsAsContent ? -1 : text.indexOf(CALL_OPEN);
    let end = text.length;
    if (call >= 0) end = call;
    else if (!this.callsAsContent) end -= partialTagLength(text, CALL_OPEN);
    delta.content = afterLeadingBreaks(text.slice(0, end), this.contentBegun);
    this.contentBegun ||= delta.content.length > 0;
    if (call >= 0) this.phase = 'call';
    else this.held = text.slice(end);
    return delta;
  }
}
