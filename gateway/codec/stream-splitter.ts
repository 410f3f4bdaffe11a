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

/**
 * Turns sampled ids into reasoning and content deltas as they arrive. Text inside `<think>` is
 * reasoning; text after it is content until the first `<tool_call>`, whose calls are returned
 * whole once the turn is parsed. Decoding the whole turn each time keeps multi-byte characters
 * split across tokens intact.
 */
export class StreamSplitter {
  private readonly ids: number[] = [];
  private sentReasoning = 0;
  private sentContent = 0;

  /**
   * @param startsInReasoning the generation prompt already opened `<think>` (thinking templates),
   *   so the turn begins as reasoning without sampling the tag. Default false.
   */
  constructor(
    private readonly tokenizer: Pick<TextTokenizer, 'decode'>,
    private readonly endOfTurnId: number,
    private readonly startsInReasoning = false,
  ) {}

  push(ids: number[]): StreamDelta {
    this.ids.push(...ids.filter((id) => id !== this.endOfTurnId));
    let text = (this.startsInReasoning ? THINK_OPEN : '') + this.tokenizer.decode(this.ids);
    // An incomplete multi-byte character decodes to U+FFFD until its last token arrives.
    while (text.endsWith('\uFFFD')) text = text.slice(0, -1);
    let reasoning = '';
    let rest = text;
    if (text.trimStart().startsWith(THINK_OPEN) || THINK_OPEN.startsWith(text.trimStart())) {
      const afterOpen = text.trimStart().slice(THINK_OPEN.length);
      const close = afterOpen.indexOf(THINK_CLOSE);
      if (close < 0) {
        reasoning = afterOpen.slice(0, afterOpen.length - partialTagLength(afterOpen, THINK_CLOSE));
        rest = '';
      } else {
        reasoning = afterOpen.slice(0, close);
        rest = afterOpen.slice(close + THINK_CLOSE.length);
      }
    }
    reasoning = reasoning.replace(/^\n+/, '');
    let content = rest.replace(/^\n+/, '');
    const call = content.indexOf(CALL_OPEN);
    content = call >= 0 ? content.slice(0, call) : content.slice(0, content.length - partialTagLength(content, CALL_OPEN));
    const delta = {
      reasoning: reasoning.slice(this.sentReasoning),
      content: content.slice(this.sentContent),
    };
    this.sentReasoning = Math.max(this.sentReasoning, reasoning.length);
    this.sentContent = Math.max(this.sentContent, content.length);
    return delta;
  }
}
