import type { ChatMessage, ToolCall, ToolSpec } from '../codec/index.js';
import { InvalidRequestError } from '../session/errors.js';
import type { AssistantMessage } from '../session/turn-runner.js';
import type { CustomTool, FunctionTool, InputItem, ToolIn } from './openai-responses-schema.js';

/**
 * Lowering of a Responses request to the codec's messages and tools, and the reasoning token the
 * gateway hands out as `encrypted_content`.
 */

/** What a tool name in the prompt stands for on the client's side. */
export interface ClientTool {
  kind: 'function' | 'custom';
  name: string;
  namespace?: string;
}

export interface LoweredTools {
  specs: ToolSpec[] | undefined;
  /** Prompt name → the client's tool, to answer with the item type and name the client declared. */
  byPromptName: Map<string, ClientTool>;
}

/**
 * Namespace tools are flattened to `<namespace>.<tool>` in the prompt: unique as long as no plain
 * function is itself named with a dot, and readable to the model. Calls go back to the client as
 * `name` + `namespace`, as the API reports them.
 */
export const NAMESPACE_SEPARATOR = '.';

/** A custom tool takes free-form text; the model sees a function with one string argument. */
export const CUSTOM_INPUT = 'input';

function functionSpec(tool: FunctionTool, name: string): ToolSpec {
  const fn: ToolSpec['function'] = { name };
  if (tool.description) fn.description = tool.description;
  if (tool.parameters) fn.parameters = tool.parameters;
  return { type: 'function', function: fn };
}

function customSpec(tool: CustomTool, name: string): ToolSpec {
  const grammar = tool.format?.definition
    ? `\n\nThe ${CUSTOM_INPUT} must follow this ${tool.format.syntax ?? ''} grammar:\n${tool.format.definition}`
    : '';
  const description = `${tool.description ?? ''}${grammar}`.trim();
  return {
    type: 'function',
    function: {
      name,
      ...(description ? { description } : {}),
      parameters: { type: 'object', properties: { [CUSTOM_INPUT]: { type: 'string' } }, required: [CUSTOM_INPUT] },
    },
  };
}

export function lowerTools(tools: ToolIn[] | null | undefined): LoweredTools {
  const specs: ToolSpec[] = [];
  const byPromptName = new Map<string, ClientTool>();
  const add = (tool: FunctionTool | CustomTool, namespace?: string): void => {
    const promptName = namespace ? `${namespace}${NAMESPACE_SEPARATOR}${tool.name}` : tool.name;
    specs.push(tool.type === 'custom' ? customSpec(tool, promptName) : functionSpec(tool, promptName));
    byPromptName.set(promptName, { kind: tool.type, name: tool.name, ...(namespace ? { namespace } : {}) });
  };
  for (const tool of tools ?? []) {
    if (tool.type === 'namespace') tool.tools.forEach((child) => add(child, tool.name));
    else if (tool.type !== 'hosted') add(tool);
  }
  // No tools renders like an absent tool list, so a request without tools keeps its chain.
  return { specs: specs.length > 0 ? specs : undefined, byPromptName };
}

/**
 * A sampled call in the form the client echoes it back: a custom tool's call carries one text
 * `input`, so a call the model wrote with other keys becomes `{input: <its arguments as JSON>}`,
 * the text the client gets. The reply is stored in this form, so the echo continues the chain.
 */
export function presentCall(call: ToolCall, tools: LoweredTools): ToolCall {
  if (tools.byPromptName.get(call.name)?.kind !== 'custom') return call;
  const input = call.arguments[CUSTOM_INPUT];
  if (typeof input === 'string' && Object.keys(call.arguments).length === 1) return call;
  return { name: call.name, arguments: { [CUSTOM_INPUT]: JSON.stringify(call.arguments) } };
}

/** The prompt name of a call the client echoes: with its namespace, or found among the namespaced tools. */
function promptNameOf(tools: LoweredTools, name: string, namespace: string | null | undefined): string {
  if (namespace) return `${namespace}${NAMESPACE_SEPARATOR}${name}`;
  if (tools.byPromptName.has(name)) return name;
  const namespaced = [...tools.byPromptName].filter(([, t]) => t.namespace !== undefined && t.name === name);
  return namespaced.length === 1 && namespaced[0] ? namespaced[0][0] : name;
}

interface EncodedReasoning {
  reasoning: string;
}

/** The gateway's `encrypted_content`: the reasoning itself, so a `store: false` client can echo it back. */
export function encodeReasoning(reasoning: string): string {
  const payload: EncodedReasoning = { reasoning };
  return Buffer.from(JSON.stringify(payload), 'utf8').toString('base64');
}

function decodeReasoning(encrypted: string): string | undefined {
  try {
    const payload = JSON.parse(Buffer.from(encrypted, 'base64').toString('utf8')) as Partial<EncodedReasoning>;
    return typeof payload.reasoning === 'string' ? payload.reasoning : undefined;
  } catch {
    // Not one of ours (another provider's opaque blob): the summary stands in for it.
    return undefined;
  }
}

function textOf(content: string | { text?: string }[]): string {
  return typeof content === 'string' ? content : content.map((part) => part.text ?? '').join('');
}

function reasoningOf(item: Extract<InputItem, { type: 'reasoning' }>): string {
  const decoded = item.encrypted_content ? decodeReasoning(item.encrypted_content) : undefined;
  if (decoded !== undefined) return decoded;
  const summary = (item.summary ?? []).map((p) => p.text ?? '').filter(Boolean);
  if (summary.length > 0) return summary.join('\n\n');
  return (item.content ?? []).map((p) => p.text ?? '').join('');
}

function parseArguments(json: string, index: number): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(json || '{}');
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // reported below
  }
  throw new InvalidRequestError(`input[${index}].arguments is not a JSON object`);
}

/**
 * Where an item sits in one model turn as the gateway answers it: reasoning, then text, then
 * calls. An item that cannot follow the previous one starts the next assistant turn.
 */
const Stage = { Reasoning: 0, Message: 1, Call: 2 } as const;
type Stage = (typeof Stage)[keyof typeof Stage];

/**
 * Lowers `instructions` and input items to messages. The items of one model turn (reasoning,
 * message, calls) become ONE assistant message, so a re-sent history has the same canonical form
 * as the reply the turn produced. `instructions` and the system/developer messages before the
 * first other item become one system message; later ones stay where they are.
 */
export function lowerInput(instructions: string | null | undefined, items: InputItem[], tools: LoweredTools): ChatMessage[] {
  const messages: ChatMessage[] = [];
  let turn: { message: AssistantMessage; stage: Stage } | undefined;
  const assistant = (stage: Stage): AssistantMessage => {
    const continues = turn && (stage > turn.stage || (stage === turn.stage && stage !== Stage.Message));
    if (!turn || !continues) {
      turn = { message: { role: 'assistant', content: '' }, stage };
      messages.push(turn.message);
    }
    turn.stage = stage;
    return turn.message;
  };
  const push = (message: ChatMessage): void => {
    turn = undefined;
    messages.push(message);
  };
  const call = (stageMessage: AssistantMessage, toolCall: ToolCall): void => {
    stageMessage.tool_calls = [...(stageMessage.tool_calls ?? []), toolCall];
  };

  if (instructions) push({ role: 'system', content: instructions });
  items.forEach((item, i) => {
    switch (item.type) {
      case 'message':
        if (item.role === 'assistant') assistant(Stage.Message).content = textOf(item.content);
        else push({ role: item.role === 'user' ? 'user' : 'system', content: textOf(item.content) });
        break;
      case 'reasoning': {
        const message = assistant(Stage.Reasoning);
        const text = reasoningOf(item);
        message.reasoning_content = message.reasoning_content ? `${message.reasoning_content}\n\n${text}` : text;
        break;
      }
      case 'function_call':
        call(assistant(Stage.Call), { name: promptNameOf(tools, item.name, item.namespace), arguments: parseArguments(item.arguments, i) });
        break;
      case 'custom_tool_call':
        call(assistant(Stage.Call), { name: promptNameOf(tools, item.name, undefined), arguments: { [CUSTOM_INPUT]: item.input } });
        break;
      case 'function_call_output':
      case 'custom_tool_call_output':
        push({ role: 'tool', content: textOf(item.output), tool_call_id: item.call_id });
        break;
      case 'ignored':
        break;
    }
  });

  const leading = messages.findIndex((m) => m.role !== 'system');
  const systemCount = leading < 0 ? messages.length : leading;
  if (systemCount < 2) return messages;
  const system: ChatMessage = { role: 'system', content: messages.slice(0, systemCount).map((m) => m.content).join('\n\n') };
  return [system, ...messages.slice(systemCount)];
}
