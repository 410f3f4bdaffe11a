import { hash } from 'node:crypto';

/**
 * The protocol-neutral conversation the codec renders. Every protocol lowers its request to this
 * shape; the chat template sees exactly these fields.
 */
export interface ToolCall {
  name: string;
  /** Parsed arguments; the template serialises them as the model was trained to see them. */
  arguments: Record<string, unknown>;
}

export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string; reasoning_content?: string; tool_calls?: ToolCall[] }
  | { role: 'tool'; content: string; tool_call_id?: string };

/** A tool as the template renders it (OpenAI function-tool shape). */
export interface ToolSpec {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

/**
 * A stable string for comparing histories: clients re-send history with different ids, content
 * forms and reasoning echoes, so only what the model saw as text and call arguments counts.
 */
export function canonicalKey(message: ChatMessage): string {
  switch (message.role) {
    case 'assistant':
      return JSON.stringify([
        'assistant',
        message.content.trim(),
        (message.tool_calls ?? []).map((c) => [c.name, sortKeys(c.arguments)]),
      ]);
    case 'tool':
      return JSON.stringify(['tool', message.content]);
    default:
      return JSON.stringify([message.role, message.content]);
  }
}

/**
 * A message's identity for matching histories: a 128-bit digest of what `canonicalKey` compares,
 * so a live chain keeps 22 characters a message instead of its text. The parts are hashed
 * length-prefixed rather than as canonical JSON, which would copy and escape every message's text
 * on every request (a lone surrogate hashes as U+FFFD, as the tokenizer reads it). One-shot
 * `crypto.hash` over the concatenated parts: a Hash object per message costs more than the hashing.
 */
export function messageDigest(message: ChatMessage): string {
  const role = `${message.role.length}:${message.role}`;
  if (message.role !== 'assistant') return hash('sha256', `${role}${message.content.length}:${message.content}`, 'base64').slice(0, 22);
  const content = message.content.trim();
  const calls = JSON.stringify((message.tool_calls ?? []).map((c) => [c.name, sortKeys(c.arguments)]));
  return hash('sha256', `${role}${content.length}:${content}${calls.length}:${calls}`, 'base64').slice(0, 22);
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return Object.fromEntries(entries.map(([k, v]) => [k, sortKeys(v)]));
  }
  return value;
}
