import type { ToolCall } from './messages.js';

/** A model turn split into what the protocols return. */
export interface ParsedTurn {
  reasoning: string | undefined;
  content: string;
  toolCalls: ToolCall[];
  /** Tool-call blocks that were not valid JSON; kept as content so nothing is silently lost. */
  invalidToolCalls: number;
}

const THINK_OPEN = '<think>';
const THINK_CLOSE = '</think>';
/**
 * Splits `<think>…</think>` reasoning off a turn. The generation prompt may already hold the
 * opening tag, so the reasoning runs from the start when only the closing tag was sampled.
 */
export function splitReasoning(text: string): { reasoning: string | undefined; rest: string } {
  const close = text.indexOf(THINK_CLOSE);
  if (close < 0) return { reasoning: undefined, rest: text };
  const open = text.indexOf(THINK_OPEN);
  return {
    reasoning: text.slice(open >= 0 && open < close ? open + THINK_OPEN.length : 0, close).trim(),
    rest: text.slice(close + THINK_CLOSE.length),
  };
}

const CALL_RE = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g;

/**
 * Parses a Qwen3 turn: optional `<think>…</think>` reasoning, then text, then
 * `<tool_call>{"name": …, "arguments": {…}}</tool_call>` blocks. `text` excludes the end-of-turn
 * token.
 */
export function parseQwen3Turn(text: string): ParsedTurn {
  const { reasoning, rest } = splitReasoning(text);
  const toolCalls: ToolCall[] = [];
  let invalidToolCalls = 0;
  let content = '';
  let last = 0;
  for (const match of rest.matchAll(CALL_RE)) {
    const call = parseCallJson(match[1] ?? '');
    content += rest.slice(last, match.index);
    if (call) toolCalls.push(call);
    else {
      invalidToolCalls += 1;
      content += match[0];
    }
    last = match.index + match[0].length;
  }
  content += rest.slice(last);
  return { reasoning, content: content.trim(), toolCalls, invalidToolCalls };
}

function parseCallJson(json: string): ToolCall | undefined {
  try {
    const value = JSON.parse(json) as { name?: unknown; arguments?: unknown };
    if (typeof value.name !== 'string') return undefined;
    const args =
      typeof value.arguments === 'string' ? (JSON.parse(value.arguments) as unknown) : value.arguments;
    if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args))) {
      return undefined;
    }
    return { name: value.name, arguments: (args ?? {}) as Record<string, unknown> };
  } catch {
    return undefined;
  }
}
