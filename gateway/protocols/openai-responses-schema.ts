import { z } from 'zod';
import { JsonText, Name, REQUEST_LIMITS, Text } from '../limits.js';

/**
 * OpenAI Responses request schema. Lenient on fields that do not shape the prompt (`store`,
 * `include`, `text`, `reasoning`, `prompt_cache_key`, `client_metadata`, ids, statuses...), strict
 * on the ones that do: roles, call ids, names and argument strings.
 */

const TextPart = z.object({ type: Name, text: Text.optional() }).passthrough();
const TextParts = z.array(TextPart).max(REQUEST_LIMITS.maxParts);
/** A message or tool output: a string, or parts of which only the text ones reach the model. */
const Content = z.union([Text, TextParts]);

const MessageItem = z
  .object({ type: z.literal('message'), role: z.enum(['user', 'assistant', 'system', 'developer']), content: Content })
  .passthrough();
const ReasoningItem = z
  .object({
    type: z.literal('reasoning'),
    summary: TextParts.nullish(),
    content: TextParts.nullish(),
    encrypted_content: Text.nullish(),
  })
  .passthrough();
const FunctionCallItem = z
  .object({
    type: z.literal('function_call'),
    call_id: Name,
    name: Name.min(1),
    /** Set by the API for tools of a `namespace` tool. */
    namespace: Name.nullish(),
    arguments: JsonText,
  })
  .passthrough();
const FunctionCallOutputItem = z
  .object({ type: z.literal('function_call_output'), call_id: Name, output: Content })
  .passthrough();
const CustomToolCallItem = z
  .object({ type: z.literal('custom_tool_call'), call_id: Name, name: Name.min(1), input: Text })
  .passthrough();
const CustomToolCallOutputItem = z
  .object({ type: z.literal('custom_tool_call_output'), call_id: Name, output: Content })
  .passthrough();

/** Reports a nested schema's issues at their place in the request. */
function forwardIssues(error: z.ZodError, ctx: z.RefinementCtx, prefix: PropertyKey[]): void {
  for (const issue of error.issues) ctx.addIssue({ code: 'custom', message: issue.message, path: [...prefix, ...issue.path] });
}

const KnownItem = z.discriminatedUnion('type', [
  MessageItem,
  ReasoningItem,
  FunctionCallItem,
  FunctionCallOutputItem,
  CustomToolCallItem,
  CustomToolCallOutputItem,
]);
export type KnownItem = z.infer<typeof KnownItem>;
export type InputItem = KnownItem | { type: 'ignored'; original: string };

const KNOWN_ITEM_TYPES: ReadonlySet<string> = new Set(KnownItem.options.map((o) => o.shape.type.value));

/**
 * One input item; one without `type` is a `message`. Item types the model cannot have produced
 * here (hosted-tool calls, references to server-side items) are kept as `ignored`: they never
 * reach the prompt, and rejecting them would stop the client.
 */
export const InputItem = z
  .object({ type: Name.optional() })
  .passthrough()
  .transform((item, ctx): InputItem => {
    const type = item.type ?? 'message';
    if (!KNOWN_ITEM_TYPES.has(type)) return { type: 'ignored', original: type };
    const parsed = KnownItem.safeParse({ ...item, type });
    if (parsed.success) return parsed.data;
    forwardIssues(parsed.error, ctx, []);
    return z.NEVER;
  });

const FunctionTool = z
  .object({
    type: z.literal('function'),
    name: Name.min(1),
    description: Text.nullish(),
    parameters: z.record(z.string(), z.unknown()).nullish(),
  })
  .passthrough();
const CustomTool = z
  .object({
    type: z.literal('custom'),
    name: Name.min(1),
    description: Text.nullish(),
    format: z.object({ type: Name, syntax: Name.optional(), definition: Text.optional() }).passthrough().nullish(),
  })
  .passthrough();
const NamespaceChild = z.discriminatedUnion('type', [FunctionTool, CustomTool]);
const NamespaceTool = z
  .object({
    type: z.literal('namespace'),
    name: Name.min(1),
    description: Text.nullish(),
    tools: z.array(z.object({ type: Name }).passthrough()).max(REQUEST_LIMITS.maxTools),
  })
  .passthrough();

export type FunctionTool = z.infer<typeof FunctionTool>;
export type CustomTool = z.infer<typeof CustomTool>;
export type ToolIn =
  | FunctionTool
  | CustomTool
  | { type: 'namespace'; name: string; description?: string | null; tools: (FunctionTool | CustomTool)[] }
  | { type: 'hosted'; original: string };

/** Validates one child of a namespace; hosted or unknown children are dropped like top-level ones. */
function namespaceChildren(tools: { type: string }[], ctx: z.RefinementCtx): (FunctionTool | CustomTool)[] {
  const out: (FunctionTool | CustomTool)[] = [];
  tools.forEach((tool, i) => {
    if (tool.type !== 'function' && tool.type !== 'custom') return;
    const parsed = NamespaceChild.safeParse(tool);
    if (parsed.success) out.push(parsed.data);
    else forwardIssues(parsed.error, ctx, ['tools', i]);
  });
  return out;
}

/**
 * One tool. `function`, `custom` and `namespace` tools reach the prompt; every other type is a
 * hosted tool (`web_search`, `file_search`, `tool_search`, `local_shell`, ...) that the gateway
 * cannot run, dropped rather than rejected.
 */
export const ToolIn = z
  .object({ type: Name })
  .passthrough()
  .transform((tool, ctx): ToolIn => {
    const schema = tool.type === 'function' ? FunctionTool : tool.type === 'custom' ? CustomTool : tool.type === 'namespace' ? NamespaceTool : undefined;
    if (!schema) return { type: 'hosted', original: tool.type };
    const parsed = schema.safeParse(tool);
    if (!parsed.success) {
      forwardIssues(parsed.error, ctx, []);
      return z.NEVER;
    }
    if (parsed.data.type !== 'namespace') return parsed.data;
    return { ...parsed.data, tools: namespaceChildren(parsed.data.tools, ctx) };
  });

export const ResponsesRequest = z
  .object({
    model: Name.optional(),
    /** A string is one user message. */
    input: z.preprocess((input) => (typeof input === 'string' ? [{ type: 'message', role: 'user', content: input }] : input), z.array(InputItem).max(REQUEST_LIMITS.maxMessages)),
    instructions: Text.nullish(),
    tools: z.array(ToolIn).max(REQUEST_LIMITS.maxTools).nullish(),
    tool_choice: z.unknown().optional(),
    previous_response_id: Name.min(1).nullish(),
    max_output_tokens: z.number().int().positive().nullish(),
    temperature: z.number().min(0).max(2).nullish(),
    top_p: z.number().gt(0).max(1).nullish(),
    stream: z.boolean().nullish(),
    store: z.boolean().nullish(),
    parallel_tool_calls: z.boolean().nullish(),
    metadata: z.unknown().optional(),
  })
  .passthrough();
export type ResponsesRequest = z.infer<typeof ResponsesRequest>;

/** Items as stored for `previous_response_id` (earlier inputs and outputs, already validated). */
export const StoredItems = z.array(InputItem);
