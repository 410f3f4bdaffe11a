import { createHash } from 'node:crypto';
import type { AssistantMessage, TurnResult, TurnUsage } from '../session/turn-runner.js';
import type { MessagesRequest, OutputFormat } from './anthropic-schema.js';
import { newId } from './ids.js';

export type StopReason = 'end_turn' | 'tool_use' | 'max_tokens';

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
}

export type ContentBlockOut =
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

export const newMessageId = (): string => newId('msg_');
export const newToolUseId = (): string => newId('toolu_');

/**
 * Anthropic's usage fields are disjoint: clients (Claude Code) add `input_tokens`,
 * `cache_read_input_tokens` and `cache_creation_input_tokens` to get the context size. So the
 * prompt the engine received is split into the part it had cached (`cache_read_input_tokens`) and
 * the rest (`input_tokens`), and their sum is exactly the prompt length; nothing is ever "created"
 * in a cache the client pays for. `output_tokens` is every sampled token, end-of-turn included.
 */
export function usageOut(usage: TurnUsage): AnthropicUsage {
  return {
    input_tokens: usage.promptTokens - usage.cachedTokens,
    output_tokens: usage.completionTokens,
    cache_read_input_tokens: usage.cachedTokens,
    cache_creation_input_tokens: 0,
  };
}

export function stopReasonOf(result: Exclude<TurnResult, { kind: 'aborted' }>): StopReason {
  if (result.kind === 'budget' || result.finishReason === 'length') return 'max_tokens';
  return result.finishReason === 'tool_calls' ? 'tool_use' : 'end_turn';
}

export function budgetText(result: Extract<TurnResult, { kind: 'budget' }>): string {
  return `[agent-rollout: the session's ${result.reason} budget is exhausted]`;
}

/** Clients must echo a signature with each thinking block; any value is accepted back, so a hash of the text serves. */
export function thinkingSignature(thinking: string): string {
  return createHash('sha256').update(thinking).digest('base64');
}

/** The JSON schema the answer's text must fit, when the request asked for structured output. */
export function jsonSchemaOf(body: MessagesRequest): Record<string, unknown> | undefined {
  const format: OutputFormat | undefined = body.output_config?.format ?? body.output_format;
  return format?.type === 'json_schema' ? (format.schema ?? {}) : undefined;
}

/**
 * Makes the answer's text valid JSON for a structured-output request: the model's text if it
 * parses (code fences removed), else the text as the schema's first string property (or as a
 * JSON string when there is none). Only the response changes; the trajectory keeps what was sampled.
 */
export function jsonAnswer(text: string, schema: Record<string, unknown>): string {
  const trimmed = text.trim();
  const unfenced = /^```(?:json)?\s*([\s\S]*?)\s*```$/.exec(trimmed)?.[1] ?? trimmed;
  try {
    JSON.parse(unfenced);
    return unfenced;
  } catch {
    // not JSON: wrapped below
  }
  const properties = (schema.properties ?? {}) as Record<string, { type?: unknown }>;
  const field = Object.entries(properties).find(([, p]) => p?.type === 'string')?.[0];
  return JSON.stringify(field === undefined ? trimmed : { [field]: trimmed });
}

/** The answer's content blocks: `[thinking?, text?, tool_use*]`, with at least one block. */
export function contentOut(reply: AssistantMessage, text: string): ContentBlockOut[] {
  const blocks: ContentBlockOut[] = [];
  if (reply.reasoning_content) {
    blocks.push({
      type: 'thinking',
      thinking: reply.reasoning_content,
      signature: thinkingSignature(reply.reasoning_content),
    });
  }
  const calls = reply.tool_calls ?? [];
  if (text || calls.length === 0) blocks.push({ type: 'text', text });
  for (const call of calls)
    blocks.push({ type: 'tool_use', id: newToolUseId(), name: call.name, input: call.arguments });
  return blocks;
}
