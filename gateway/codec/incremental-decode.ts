import type { TextTokenizer } from './tokenizer.js';

/**
 * Tokens past the last complete character after which their text is given out even though it
 * still ends in U+FFFD. A UTF-8 character spans at most 4 bytes, so this many tokens each ending
 * in an invalid or incomplete sequence are invalid bytes, not a character still arriving; waiting
 * longer would make every push decode a growing window again.
 */
const MAX_PENDING_TOKENS = 16;

/**
 * Text of sampled ids as they arrive, decoding only a short window each time (the way TGI and
 * vLLM detokenize streams): the text of `ids[prefix..]` past that of `ids[prefix..read]`. Both
 * decodes start at the same token, so decoders that treat the first token specially (a
 * SentencePiece leading space) cut the same way. Text ending in U+FFFD waits for its character's
 * last byte. Decoding the whole answer on each push would cost O(n²) over a long answer.
 */
export class IncrementalDecoder {
  /** Ids from `prefix` on; earlier ones are never decoded again. */
  private window: number[] = [];
  /** Ids of `window` already given out as text. */
  private read = 0;

  constructor(private readonly tokenizer: Pick<TextTokenizer, 'decode'>) {}

  /** The text the new ids add (empty while a character is incomplete). */
  push(ids: readonly number[]): string {
    for (const id of ids) this.window.push(id);
    if (this.window.length === this.read) return '';
    const given = this.tokenizer.decode(this.window.slice(0, this.read));
    const text = this.tokenizer.decode(this.window);
    const pending = this.window.length - this.read;
    if (text.length <= given.length || (text.endsWith('\uFFFD') && pending < MAX_PENDING_TOKENS)) return '';
    this.window = this.window.slice(this.read);
    this.read = this.window.length;
    return text.slice(given.length);
  }
}
