import type { ToolCall, ToolSpec } from './messages.js';
import { splitReasoning, type ParsedTurn } from './tool-parser.js';

const CALL_RE = /<tool_call>\s*<function=([^>\s]+)>([\s\S]*?)<\/function>\s*<\/tool_call>/g;
const PARAM_RE = /<parameter=([^>\s]+)>([\s\S]*?)<\/parameter>/g;

/** JSON-schema type of one parameter of a declared tool, if the request declared it. */
function parameterType(tools: ToolSpec[] | undefined, fn: string, param: string): unknown {
  const tool = tools?.find((t) => t.function.name === fn);
  const properties = (tool?.function.parameters as { properties?: Record<string, { type?: unknown }> } | undefined)?.properties;
  return properties?.[param]?.type;
}

/** Converts the raw text of a parameter to the type its schema declares; text stays text. */
function typed(raw: string, type: unknown): unknown {
  const text = raw.replace(/^\n/, '').replace(/\n$/, '');
  const types = Array.isArray(type) ? type : [type];
  if (types.includes('string') || type === undefined) return text;
  if ((types.includes('integer') || types.includes('number')) && text.trim() !== '' && Number.isFinite(Number(text))) return Number(text);
  if (types.includes('boolean') && /^(true|false)$/i.test(text.trim())) return text.trim().toLowerCase() === 'true';
  if (types.includes('null') && text.trim() === 'null') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/**
 * Parses a Qwen3-Coder / Qwen3.5 turn: `<think>` reasoning, text, then
 * `<tool_call><function=NAME><parameter=P>value</parameter>...</function></tool_call>` blocks whose
 * values are typed by the request's tool schema (the model writes every value as text).
 */
export function parseQwen3CoderTurn(text: string, tools?: ToolSpec[]): ParsedTurn {
  const { reasoning, rest } = splitReasoning(text);
  const toolCalls: ToolCall[] = [];
  let content = '';
  let last = 0;
  for (const match of rest.matchAll(CALL_RE)) {
    const name = match[1]!;
    const args: Record<string, unknown> = {};
    for (const p of (match[2] ?? '').matchAll(PARAM_RE)) args[p[1]!] = typed(p[2] ?? '', parameterType(tools, name, p[1]!));
    content += rest.slice(last, match.index);
    toolCalls.push({ name, arguments: args });
    last = match.index + match[0].length;
  }
  content += rest.slice(last);
  // An opened but unparseable call stays in the content, so nothing is silently lost.
  const invalidToolCalls = (content.match(/<tool_call>/g) ?? []).length;
  return { reasoning, content: content.trim(), toolCalls, invalidToolCalls };
}
