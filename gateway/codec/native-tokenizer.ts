import path from 'node:path';
import type { ModelFiles } from './model-files.js';
import { ByteLevelDecoder } from './byte-level.js';
import { JsTokenizer } from './js-tokenizer.js';
import type { TextTokenizer } from './tokenizer.js';

/** The `tokenizers` native module does not load here (no binary for this platform, or a bad one). */
export class NativeTokenizerUnavailableError extends Error {
  override name = 'NativeTokenizerUnavailableError';
}

/**
 * Hugging Face's Rust tokenizer: encodes on the libuv thread pool, so a 32k-token prompt does not
 * hold the event loop. Its decode is asynchronous only, so decode and tokenId read the byte-level
 * vocabulary directly, or use the pure-JS tokenizer for tokenizers that are not byte-level BPE.
 */
export async function loadNativeTokenizer(files: ModelFiles): Promise<TextTokenizer> {
  let native: typeof import('tokenizers');
  try {
    native = await import('tokenizers');
  } catch (err) {
    throw new NativeTokenizerUnavailableError(err instanceof Error ? err.message.split('\n')[0] : String(err));
  }
  // The file loadModelFiles parsed: read by Rust directly, it costs ~25 MB less than a JSON string.
  const tokenizer = native.Tokenizer.fromFile(path.join(files.dir, 'tokenizer.json'));
  const sync = ByteLevelDecoder.of(files) ?? new JsTokenizer(files);
  return {
    kind: 'native',
    pretokenCache: false,
    async encode(text) {
      const encoding = await tokenizer.encode(text, null, { addSpecialTokens: false });
      return encoding.getIds();
    },
    async encodeBatch(texts) {
      const encodings = await tokenizer.encodeBatch(texts, { addSpecialTokens: false });
      return encodings.map((e) => e.getIds());
    },
    decode: (ids) => sync.decode(ids),
    tokenId: (text) => sync.tokenId(text),
  };
}
