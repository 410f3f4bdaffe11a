import { z } from 'zod';
import { Name, REQUEST_LIMITS, Text } from '../limits.js';

/**
 * Anthropic Messages request schemas. Objects strip unknown fields (`cache_control`, `metadata`,
 * `thinking`, `context_management`, `citations`...) instead of rejecting them; block types, roles,
 * tool inputs and sampling bounds are checked because a wrong value there would change the tokens.
 */

const TextBlock = z.object({ type: z.literal('text'), text: Text });
const ImageBlock = z.object({ type: z.literal('image') });
const DocumentBlock = z.object({ type: z.literal('document') });
const ToolResultBlock = z.object({
  type: z.literal('tool_result'),
  tool_use_id: Name,
  content: z
    .union([
      Text,
      z.array(z.discriminatedUnion('type', [TextBlock, ImageBlock, DocumentBlock])).max(REQUEST_LIMITS.maxParts),
    ])
    .optional(),
  is_error: z.boolean().optional(),
});
const ToolUseBlock = z.object({
  type: z.literal('tool_use'),
  id: Name,
  name: Name.min(1),
  input: z.record(z.string(), z.unknown()),
});
const ThinkingBlock = z.object({
  type: z.literal('thinking'),
  thinking: Text,
  signature: Text.optional(),
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
  content: z.union([Text, z.array(ContentBlock).max(REQUEST_LIMITS.maxParts)]),
});
export type MessageIn = z.infer<typeof MessageIn>;

/** Custom tools have no `type` or `type: "custom"`; anything else is a server tool. */
const ToolIn = z.object({
  type: Name.optional(),
  name: Name.min(1),
  description: Text.optional(),
  input_schema: z.record(z.string(), z.unknown()).optional(),
});
export type ToolIn = z.infer<typeof ToolIn>;

const OutputFormat = z.object({
  type: Name,
  schema: z.record(z.string(), z.unknown()).optional(),
});
export type OutputFormat = z.infer<typeof OutputFormat>;

const PromptFields = {
  model: Name.optional(),
  system: z.union([Text, z.array(TextBlock).max(REQUEST_LIMITS.maxParts)]).optional(),
  messages: z.array(MessageIn).min(1).max(REQUEST_LIMITS.maxMessages),
  tools: z.array(ToolIn).max(REQUEST_LIMITS.maxTools).optional(),
};

export const MessagesRequest = z.object({
  ...PromptFields,
  max_tokens: z.number().int().positive(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().gt(0).max(1).optional(),
  stream: z.boolean().optional(),
  /** Checked by `callsAllowed` (request-options.ts). */
  tool_choice: z.unknown().optional(),
  output_config: z.object({ format: OutputFormat.optional() }).optional(),
  /** The structured-outputs beta spelling of `output_config.format`. */
  output_format: OutputFormat.optional(),
});
export type MessagesRequest = z.infer<typeof MessagesRequest>;

export const CountTokensRequest = z.object(PromptFields);
export type CountTokensRequest = z.infer<typeof CountTokensRequest>;
