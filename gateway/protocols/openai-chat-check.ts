import { exceedsJsonDepth, REQUEST_LIMITS } from '../limits.js';
import type { ChatCompletionRequest } from './openai-chat.js';

/**
 * A hand-written check of a parsed JSON body against `ChatCompletionRequest`, for the common case:
 * when it returns true the zod schema accepts the body and would return an equal copy of it (the
 * schema has no defaults or transforms), so the body is used as it is. It may refuse a body the
 * schema accepts; the caller then runs the schema, which also words the errors. Zod's parse of a
 * whole history allocates a copy of every message, every turn.
 */
export function isPlainChatRequest(body: unknown): body is ChatCompletionRequest {
  if (!isRecord(body)) return false;
  const { messages, tools } = body;
  if (!Array.isArray(messages) || messages.length < 1 || messages.length > REQUEST_LIMITS.maxMessages) return false;
  for (const m of messages) if (!isMessage(m)) return false;
  if (tools !== undefined && !(Array.isArray(tools) && tools.length <= REQUEST_LIMITS.maxTools && tools.every(isTool))) return false;
  return (
    optional(body.model, isName) &&
    nullish(body.max_tokens, isPositiveInteger) &&
    nullish(body.max_completion_tokens, isPositiveInteger) &&
    nullish(body.temperature, (v) => typeof v === 'number' && v >= 0 && v <= 2) &&
    nullish(body.top_p, (v) => typeof v === 'number' && v > 0 && v <= 1) &&
    nullish(body.n, (v) => v === 1) &&
    nullish(body.stream, isBoolean) &&
    nullish(body.parallel_tool_calls, isBoolean) &&
    nullish(body.stream_options, (v) => isRecord(v) && optional(v.include_usage, isBoolean))
  );
}

function isMessage(m: unknown): boolean {
  if (!isRecord(m) || !optional(m.content, isContent)) return false;
  switch (m.role) {
    case 'system':
    case 'developer':
    case 'user':
      return true;
    case 'assistant':
      return (
        nullish(m.reasoning_content, isText) &&
        nullish(m.tool_calls, (calls) => Array.isArray(calls) && calls.length <= REQUEST_LIMITS.maxParts && calls.every(isToolCall))
      );
    case 'tool':
      return optional(m.tool_call_id, isName);
    default:
      return false;
  }
}

function isContent(content: unknown): boolean {
  if (content === null || isText(content)) return true;
  return (
    Array.isArray(content) &&
    content.length <= REQUEST_LIMITS.maxParts &&
    content.every((part) => isRecord(part) && isName(part.type) && optional(part.text, isText))
  );
}

function isToolCall(call: unknown): boolean {
  if (!isRecord(call) || !optional(call.id, isName) || !optional(call.type, (t) => t === 'function')) return false;
  const fn = call.function;
  return isRecord(fn) && isName(fn.name) && isText(fn.arguments) && !exceedsJsonDepth(fn.arguments);
}

function isTool(tool: unknown): boolean {
  if (!isRecord(tool) || tool.type !== 'function') return false;
  const fn = tool.function;
  return isRecord(fn) && isName(fn.name) && fn.name.length >= 1 && optional(fn.description, isText) && optional(fn.parameters, isRecord);
}

/** An object as JSON.parse makes them; anything else goes to zod. */
function isRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

const isText = (v: unknown): v is string => typeof v === 'string' && v.length <= REQUEST_LIMITS.maxTextChars;
const isName = (v: unknown): v is string => typeof v === 'string' && v.length <= REQUEST_LIMITS.maxNameChars;
const isBoolean = (v: unknown): boolean => typeof v === 'boolean';
const isPositiveInteger = (v: unknown): boolean => Number.isSafeInteger(v) && (v as number) > 0;
const optional = (v: unknown, check: (v: unknown) => boolean): boolean => v === undefined || check(v);
const nullish = (v: unknown, check: (v: unknown) => boolean): boolean => v === undefined || v === null || check(v);
