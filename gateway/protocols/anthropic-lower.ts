import type { ChatMessage, ToolCall, ToolSpec } from '../codec/index.js';
import { InvalidRequestError } from '../session/errors.js';
import type {
  ContentBlock,
  CountTokensRequest,
  MessageIn,
  ToolIn,
  ToolResultBlock,
} from './anthropic-schema.js';

/** Claude Code's per-conversation billing line; it differs per conversation, so keeping it breaks prefix reuse at token 0. */
const BILLING_PREFIX = 'x-anthropic-billing-header:';
const IMAGE_PLACEHOLDER = '[image]';
const DOCUMENT_PLACEHOLDER = '[document]';
const BLOCK_SEPARATOR = '\n\n';

export interface LoweredRequest {
  messages: ChatMessage[];
  tools: ToolSpec[] | undefined;
}

/** Lowers an Anthropic request to the codec's messages and function tools. */
export function lowerAnthropicRequest(body: CountTokensRequest): LoweredRequest {
  const messages: ChatMessage[] = [];
  const system = systemText(body.system);
  if (system) messages.push({ role: 'system', content: system });
  for (const turn of mergeTurns(body.messages)) {
    messages.push(
      ...(turn.role === 'user'
        ? lowerUser(turn.blocks, turn.index)
        : [lowerAssistant(turn.blocks, turn.index)]),
    );
  }
  return { messages, tools: body.tools?.filter(isCustomTool).map(toolSpec) };
}

/** Absent fields stay absent: the template would render an `undefined` description as `null`. */
function toolSpec(tool: ToolIn): ToolSpec {
  const spec: ToolSpec = { type: 'function', function: { name: tool.name } };
  if (tool.description !== undefined) spec.function.description = tool.description;
  if (tool.input_schema !== undefined) spec.function.parameters = tool.input_schema;
  return spec;
}

function systemText(system: CountTokensRequest['system']): string {
  const blocks = typeof system === 'string' ? [system] : (system ?? []).map((b) => b.text);
  return blocks
    .map((text) =>
      text
        .split('\n')
        .filter((line) => !line.startsWith(BILLING_PREFIX))
        .join('\n'),
    )
    .filter((text) => text.trim() !== '')
    .join(BLOCK_SEPARATOR);
}

/** Server tools (`web_search_20250305`, `bash_20250124`, ...) run at the provider: the model never sees them. */
function isCustomTool(tool: ToolIn): boolean {
  return tool.type === undefined || tool.type === 'custom';
}

interface Turn {
  role: 'user' | 'assistant';
  blocks: ContentBlock[];
  /** Index of the turn's first message in the request, for error messages. */
  index: number;
}

/**
 * Normalises content to blocks, turns `role: "system"` messages into `<system-reminder>` text and
 * merges consecutive same-role messages (as Anthropic does), which folds a system message into the
 * adjacent user turn wherever it stands.
 */
function mergeTurns(messages: MessageIn[]): Turn[] {
  const turns: Turn[] = [];
  messages.forEach((m, index) => {
    let blocks: ContentBlock[] =
      typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    let role: Turn['role'];
    if (m.role === 'system') {
      role = 'user';
      const text = blocks.map((b) => requireText(b, index)).join(BLOCK_SEPARATOR);
      blocks = [{ type: 'text', text: `<system-reminder>\n${text}\n</system-reminder>` }];
    } else role = m.role;
    const last = turns[turns.length - 1];
    if (last?.role === role) last.blocks = [...last.blocks, ...blocks];
    else turns.push({ role, blocks, index });
  });
  return turns;
}

function requireText(block: ContentBlock, index: number): string {
  if (block.type !== 'text')
    throw new InvalidRequestError(
      `messages[${index}]: a system message holds only text blocks, not ${block.type}`,
    );
  return block.text;
}

/** Tool results become `tool` messages in order; the user's own text follows them as one message. */
function lowerUser(blocks: ContentBlock[], index: number): ChatMessage[] {
  const out: ChatMessage[] = [];
  const text: string[] = [];
  for (const block of blocks) {
    switch (block.type) {
      case 'tool_result':
        out.push({ role: 'tool', content: toolResultText(block), tool_call_id: block.tool_use_id });
        break;
      case 'text':
      case 'image':
      case 'document':
        text.push(plainText(block));
        break;
      default:
        throw new InvalidRequestError(
          `messages[${index}]: a user message cannot hold a ${block.type} block`,
        );
    }
  }
  if (text.length > 0) out.push({ role: 'user', content: text.join(BLOCK_SEPARATOR) });
  return out;
}

function plainText(block: Extract<ContentBlock, { type: 'text' | 'image' | 'document' }>): string {
  if (block.type === 'image') return IMAGE_PLACEHOLDER;
  if (block.type === 'document') return DOCUMENT_PLACEHOLDER;
  return block.text;
}

function toolResultText(block: ToolResultBlock): string {
  const content =
    typeof block.content === 'string'
      ? block.content
      : (block.content ?? []).map(plainText).join('\n');
  return block.is_error ? `Error: ${content}` : content;
}

/**
 * `[thinking?, text?, tool_use*]` → one assistant message, equal under `canonicalKey` to the
 * reply `runTurn` returned, so an echoed turn continues its chain.
 */
function lowerAssistant(blocks: ContentBlock[], index: number): ChatMessage {
  const reasoning: string[] = [];
  const text: string[] = [];
  const calls: ToolCall[] = [];
  for (const block of blocks) {
    switch (block.type) {
      case 'thinking':
        reasoning.push(block.thinking);
        break;
      case 'redacted_thinking':
        break;
      case 'text':
        text.push(block.text);
        break;
      case 'tool_use':
        calls.push({ name: block.name, arguments: block.input });
        break;
      default:
        throw new InvalidRequestError(
          `messages[${index}]: an assistant message cannot hold a ${block.type} block`,
        );
    }
  }
  const out: ChatMessage = { role: 'assistant', content: text.join(BLOCK_SEPARATOR) };
  if (reasoning.length > 0) out.reasoning_content = reasoning.join(BLOCK_SEPARATOR);
  if (calls.length > 0) out.tool_calls = calls;
  return out;
}
