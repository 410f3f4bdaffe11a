import { loadCodec, type Codec, type CodecOptions } from '../../gateway/codec/index.js';
import type { Config } from '../config.js';

/** The codec options `model.*` configures. */
export function configuredCodecOptions(config: Config): CodecOptions {
  return { modelDir: config.model.dir ?? undefined, enableThinking: config.model.enableThinking, toolParser: config.model.toolParser, tokenizer: config.model.tokenizer, tokenizerCache: config.model.tokenizerCache };
}

/** The model's tokenizer and chat template as `model.*` configures them. */
export function loadConfiguredCodec(config: Config): Promise<Codec> {
  return loadCodec(configuredCodecOptions(config));
}
