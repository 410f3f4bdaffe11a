import { Template } from '@huggingface/jinja';
import type { ChatMessage, ToolSpec } from './messages.js';
import type { ModelFiles } from './model-files.js';
import { separableToolHeader } from './tool-header.js';

export class ChatTemplateError extends Error {
  override name = 'ChatTemplateError';
}

/** Renders conversations with the model's own Jinja chat template. */
export interface ChatTemplate {
  render(messages: ChatMessage[], options: { tools?: ToolSpec[]; addGenerationPrompt: boolean }): string;
  /**
   * Renders as `render` does without the tools and the template's tool header, which is the same
   * text for every conversation with the same tools and first message. Present only where
   * `separableToolHeader` proves that; a turn's render then skips serialising the tools.
   */
  readonly renderWithoutToolHeader?: (messages: ChatMessage[], options: { addGenerationPrompt: boolean }) => string;
  /** The end-of-turn token text the model samples, e.g. `<|im_end|>`. */
  readonly endOfTurn: string;
}

export function createChatTemplate(files: ModelFiles, options: { enableThinking?: boolean } = {}): ChatTemplate {
  const template = new Template(files.chatTemplate);
  const eos = files.tokenizerConfig.eos_token;
  const endOfTurn = typeof eos === 'string' ? eos : eos?.content;
  if (!endOfTurn) throw new ChatTemplateError(`${files.dir}: tokenizer_config.json has no eos_token`);
  const enableThinking = options.enableThinking ?? true;
  const variables = (messages: ChatMessage[], tools: ToolSpec[] | undefined, addGenerationPrompt: boolean) => ({
    messages: messages.map(toTemplateMessage),
    // The Qwen templates test `if tools`, so an empty list must be passed as absent.
    tools: tools && tools.length > 0 ? tools : undefined,
    add_generation_prompt: addGenerationPrompt,
    enable_thinking: enableThinking,
    eos_token: endOfTurn,
    bos_token: '',
  });
  // A second parse, cut after the header, so the full template stays as it was.
  const headerEnd = separableToolHeader(template.parsed.body);
  const headerless = headerEnd === undefined ? undefined : new Template(files.chatTemplate);
  headerless?.parsed.body.splice(0, headerEnd);
  return {
    endOfTurn,
    render(messages, { tools, addGenerationPrompt }) {
      return template.render(variables(messages, tools, addGenerationPrompt));
    },
    ...(headerless && {
      renderWithoutToolHeader: (messages: ChatMessage[], { addGenerationPrompt }: { addGenerationPrompt: boolean }) =>
        headerless.render(variables(messages, undefined, addGenerationPrompt)),
    }),
  };
}

function toTemplateMessage(message: ChatMessage): object {
  // The library converts every value it is given into its own, so other messages pass as they are.
  if (message.role !== 'assistant') return message;
  const out: Record<string, unknown> = { role: 'assistant', content: message.content };
  if (message.reasoning_content !== undefined) out.reasoning_content = message.reasoning_content;
  if (message.tool_calls && message.tool_calls.length > 0) {
    out.tool_calls = message.tool_calls.map((c) => ({
      type: 'function',
      function: { name: c.name, arguments: c.arguments },
    }));
  }
  return out;
}
