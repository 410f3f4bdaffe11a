import type { ModelFiles } from './model-files.js';
import { jsTextTokenizer } from './js-tokenizer.js';
import { loadNativeTokenizer, NativeTokenizerUnavailableError } from './native-tokenizer.js';

/** Text ⇄ token ids with the model's own tokenizer, synchronously (engine-sim, test fixtures). */
export interface SyncTokenizer {
  encode(text: string): number[];
  /** Text of the ids (an array or a typed-array view of a chain). */
  decode(ids: Iterable<number>): string;
  /** Id of a single token such as `<|im_end|>`; throws if the text is not one token. */
  tokenId(text: string): number;
}

/**
 * Text ⇄ token ids for the gateway; special tokens are kept as written. Encoding is asynchronous
 * so the native tokenizer runs it on the thread pool; decode and tokenId stay synchronous because
 * the stream splitter decodes as tokens arrive.
 */
export interface TextTokenizer {
  /** Which implementation this is (after any fallback). */
  readonly kind: TokenizerKind;
  /** Whether the exact pre-token cache (pretoken-cache.ts) is in front of it. */
  readonly pretokenCache: boolean;
  encode(text: string): Promise<number[]>;
  /** The ids of each text; the native tokenizer encodes them in one call. */
  encodeBatch(texts: string[]): Promise<number[][]>;
  /** Text of the ids (an array or a typed-array view of a chain). */
  decode(ids: Iterable<number>): string;
  /** Id of a single token such as `<|im_end|>`; throws if the text is not one token. */
  tokenId(text: string): number;
}

/** `native`: Hugging Face's Rust tokenizer (`tokenizers`); `js`: the pure-JS `@huggingface/tokenizers`. */
export type TokenizerKind = 'native' | 'js';

/**
 * The tokenizer of a model directory. `native` falls back to `js`, with one warning line, when the
 * native module does not load on this platform.
 */
export async function createTokenizer(files: ModelFiles, kind: TokenizerKind = 'native'): Promise<TextTokenizer> {
  if (kind === 'js') return jsTextTokenizer(files);
  try {
    return await loadNativeTokenizer(files);
  } catch (err) {
    if (!(err instanceof NativeTokenizerUnavailableError)) throw err;
    console.warn(`native tokenizer unavailable (${err.message}); using the pure-JS tokenizer`);
    return jsTextTokenizer(files);
  }
}
