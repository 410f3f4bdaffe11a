import { Tokenizer } from '@huggingface/tokenizers';
import type { ModelFiles } from './model-files.js';

/** Text ⇄ token ids with the model's own tokenizer; special tokens are kept as written. */
export interface TextTokenizer {
  encode(text: string): number[];
  decode(ids: readonly number[]): string;
  /** Id of a single special token such as `<|im_end|>`; throws if the text is not one token. */
  tokenId(text: string): number;
}

export function createTokenizer(files: ModelFiles): TextTokenizer {
  const tokenizer = new Tokenizer(files.tokenizerJson, files.tokenizerConfig);
  return {
    encode: (text) => tokenizer.encode(text, { add_special_tokens: false }).ids,
    decode: (ids) => tokenizer.decode(Array.from(ids), { skip_special_tokens: false }),
    tokenId(text) {
      const ids = tokenizer.encode(text, { add_special_tokens: false }).ids;
      if (ids.length !== 1 || ids[0] === undefined) {
        throw new Error(`${JSON.stringify(text)} is not a single token (got ${ids.length})`);
      }
      return ids[0];
    },
  };
}
