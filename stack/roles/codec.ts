import { loadCodec, type Codec } from '../../gateway/codec/index.js';
import type { Config } from '../config.js';

/** The model's tokenizer and chat template as `model.*` configures them. */
export function loadConfiguredCodec(config: Config): Promise<Codec> {
  return loadCodec({ modelDir: config.model.dir ?? undefined, enableThinking: config.model.enableThinking, toolParser: config.model.toolParser, tokenizer: config.model.tokenizer, tokenizerCache: config.model.tokenizerCache });
}
