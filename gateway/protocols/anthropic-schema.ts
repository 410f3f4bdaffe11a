import { z } from 'zod';

/**
 * Anthropic Messages request schemas. Objects strip unknown fields (`cache_control`, `metadata`,
 * `thinking`, `context_management`, `citations`...) instead of rejecting them; block types, roles,
 * tool inputs and sampling bounds are checked because a wrong value there would change the tokens.
 */

const TextBlock = z.object({ type: z.literal('text'), text: z.string() });
const ImageBlock = z.object({ type: z.literal('image') });
const DocumentBlock = z.object({ type: z.literal('document') });
const ToolResultBlock = z.object({
  type: z.literal('tool_result'),
  tool_use_id: z.string(),
  content: z
    .union([
      z.string(),
      z.array(z.discriminatedUnion('type', [TextBlock, ImageBlock, DocumentBlock])),
    ])
    .optional(),
  is_error: z.boolean().optional(),
});
const ToolUseBlock = z.object({
  type: z.literal('tool_use'),
  id: z.string(),
  name: z.string().min(1),
  input: z.record(z.string(), z.unknown()),
});
const ThinkingBlock = z.object({
  type: z.literal('thinking'),
  thinking: z.string(),
  signature: z.string().optional(),
});
const RedactedThinkingBlock = z.object({ type: z.literal('redacted_thinking') });

export const ContentBlock = z.discriminatedUnion('type', [
  TextBlock,
  ImageBlock,
  DocumentBlock,
  ToolResultBlock,
  ToolUseBlock,
  ThinkingBlock,
  RedactedThinkingBlock,
]);
export type ContentBlock = z.infer<typeof ContentBlock>;
export type ToolResultBlock = z.infer<typeof ToolResultBlock>;

export const MessageIn = z.object({
  role: z.enum(['user', 'assistant', 'system']),
  content: z.union([z.string(), z.array(ContentBlock)]),
});
export type MessageIn = z.infer<typeof MessageIn>;

/** Custom tools have no `type` or `type: "custom"`; anything else is a server tool. */
const ToolIn = z.object({
  type: z.string().optional(),
  name: z.string().min(1),
  description: z.string().optional(),
  input_schema: z.record(z.string(), z.unknown()).optional(),
});
export type ToolIn = z.infer<typeof ToolIn>;

const OutputFormat = z.object({
  type: z.string(),
  schema: z.record(z.string(), z.unknown()).optional(),
});
export type OutputFormat = z.infer<typeof OutputFormat>;

const PromptFields = {
  model: z.string().optional(),
  system: z.union([z.string(), z.array(TextBlock)]).optional(),
  messages: z.array(MessageIn).min(1),
  tools: z.array(ToolIn).optional(),
};

export const MessagesRequest = z.object({
  ...PromptFields,
  max_tokens: z.number().int().positive(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().gt(0).max(1).optional(),
  stream: z.boolean().optional(),
  output_config: z.object({ format: OutputFormat.optional() }).optional(),
  /** The structured-outputs beta spelling of `output_config.format`. */
  output_format: OutputFormat.optional(),
});
export type MessagesRequest = z.infer<typeof MessagesRequest>;

export const CountTokensRequest = z.object(PromptFields);
export type CountTokensRequest = z.infer<typeof CountTokensRequest>;
