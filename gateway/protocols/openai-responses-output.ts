import type { ToolCall } from '../codec/index.js';
import type { StreamDelta } from '../codec/stream-splitter.js';
import type { AssistantMessage, TurnUsage } from '../session/turn-runner.js';
import { newId } from './ids.js';
import { CUSTOM_INPUT, encodeReasoning, type LoweredTools } from './openai-responses-lower.js';

/** Output items, the response object and its SSE events, shaped as the OpenAI Responses API sends them. */

type ItemStatus = 'in_progress' | 'completed';

export interface ReasoningOut {
  id: string;
  type: 'reasoning';
  summary: { type: 'summary_text'; text: string }[];
  encrypted_content?: string;
}

interface OutputText {
  type: 'output_text';
  text: string;
  annotations: unknown[];
  logprobs: unknown[];
}

export interface MessageOut {
  id: string;
  type: 'message';
  status: ItemStatus;
  role: 'assistant';
  content: OutputText[];
}

export interface FunctionCallOut {
  id: string;
  type: 'function_call';
  status: ItemStatus;
  call_id: string;
  name: string;
  namespace?: string;
  arguments: string;
}

export interface CustomToolCallOut {
  id: string;
  type: 'custom_tool_call';
  status: ItemStatus;
  call_id: string;
  name: string;
  input: string;
}

export type OutputItem = ReasoningOut | MessageOut | FunctionCallOut | CustomToolCallOut;

const outputText = (text: string): OutputText => ({ type: 'output_text', text, annotations: [], logprobs: [] });

function reasoningItem(id: string, text: string): ReasoningOut {
  return { id, type: 'reasoning', summary: [{ type: 'summary_text', text }], encrypted_content: encodeReasoning(text) };
}

export function messageItem(id: string, text: string): MessageOut {
  return { id, type: 'message', status: 'completed', role: 'assistant', content: [outputText(text)] };
}

/** A call as the client declared its tool: `custom_tool_call` for custom tools, else `function_call`. */
function callItem(call: ToolCall, tools: LoweredTools): FunctionCallOut | CustomToolCallOut {
  const tool = tools.byPromptName.get(call.name);
  const callId = newId('call_');
  if (tool?.kind === 'custom') {
    // Presented calls (presentCall) hold the text as `input`; a reply stored before may not.
    const input = call.arguments[CUSTOM_INPUT];
    const text = typeof input === 'string' ? input : JSON.stringify(call.arguments);
    return { id: newId('ctc_'), type: 'custom_tool_call', status: 'completed', call_id: callId, name: tool.name, input: text };
  }
  return {
    id: newId('fc_'),
    type: 'function_call',
    status: 'completed',
    call_id: callId,
    name: tool?.name ?? call.name,
    ...(tool?.namespace ? { namespace: tool.namespace } : {}),
    arguments: JSON.stringify(call.arguments),
  };
}

/** Ids of items already streamed, which the final items must keep. */
export interface StreamedIds {
  reasoning?: string;
  message?: string;
}

/**
 * A generated turn as output items: reasoning, then text (always, when there is no call, so the
 * client sees an answer), then one item per call.
 */
export function replyItems(reply: AssistantMessage, tools: LoweredTools, streamed: StreamedIds = {}): OutputItem[] {
  const items: OutputItem[] = [];
  const calls = reply.tool_calls ?? [];
  if (reply.reasoning_content || streamed.reasoning) items.push(reasoningItem(streamed.reasoning ?? newId('rs_'), reply.reasoning_content ?? ''));
  if (reply.content || calls.length === 0 || streamed.message) items.push(messageItem(streamed.message ?? newId('msg_'), reply.content));
  for (const call of calls) items.push(callItem(call, tools));
  return items;
}

export interface ResponsesUsage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens_details: { reasoning_tokens: number };
}

/** Exact usage: input = prompt tokens sent to the engine, output = sampled tokens. */
export function usageOut(usage: TurnUsage, reasoningTokens: number): ResponsesUsage {
  return {
    input_tokens: usage.promptTokens,
    output_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
    input_tokens_details: { cached_tokens: usage.cachedTokens },
    output_tokens_details: { reasoning_tokens: reasoningTokens },
  };
}

/** What every response object of one request repeats. */
export interface ResponseHeader {
  id: string;
  createdAt: number;
  model: string;
  instructions: string | null;
  maxOutputTokens: number | null;
  previousResponseId: string | null;
  store: boolean;
  temperature: number | null;
  topP: number | null;
  toolChoice: unknown;
  tools: unknown;
  parallelToolCalls: boolean;
}

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

export interface ResponseEnd {
  status: ResponseStatus;
  output: OutputItem[];
  usage: ResponsesUsage | null;
  incompleteReason?: 'max_output_tokens';
  error?: { code: string; message: string };
}

export function responseObject(h: ResponseHeader, end: ResponseEnd): Record<string, unknown> {
  return {
    id: h.id,
    object: 'response',
    created_at: h.createdAt,
    status: end.status,
    error: end.error ?? null,
    incomplete_details: end.incompleteReason ? { reason: end.incompleteReason } : null,
    instructions: h.instructions,
    max_output_tokens: h.maxOutputTokens,
    model: h.model,
    output: end.output,
    parallel_tool_calls: h.parallelToolCalls,
    previous_response_id: h.previousResponseId,
    store: h.store,
    temperature: h.temperature,
    top_p: h.topP,
    tool_choice: h.toolChoice,
    tools: h.tools,
    usage: end.usage,
    metadata: {},
  };
}

/** `event:` + `data:` lines; every payload carries its `type` and a `sequence_number`. */
export class ResponseEventStream {
  private sequence = 0;

  constructor(private readonly res: { write(chunk: string): void }) {}

  send(type: string, payload: Record<string, unknown>): void {
    this.res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: this.sequence++, ...payload })}\n\n`);
  }
}

interface StreamingItem {
  kind: 'reasoning' | 'message';
  id: string;
  index: number;
  /** Text sent as deltas so far. */
  sent: string;
  /** Set once its `output_item.done` went out. */
  done?: OutputItem;
}

/**
 * Streams output items: reasoning and text as their tokens arrive, calls whole once the turn is
 * parsed. Every item gets `output_item.added`, its deltas, its `.done` events and
 * `output_item.done`, in order; an item is done before the next one is added.
 */
export class OutputItemStreamer {
  private readonly streaming: StreamingItem[] = [];
  private readonly raw = { reasoning: '', message: '' };
  private nextIndex = 0;

  constructor(private readonly events: ResponseEventStream) {}

  /** Splitter deltas. Surrounding whitespace is held back: the parsed turn trims it. */
  push(delta: StreamDelta): void {
    if (delta.reasoning) this.advance('reasoning', (this.raw.reasoning += delta.reasoning).trim());
    if (delta.content) this.advance('message', (this.raw.message += delta.content).trim());
  }

  streamedIds(): StreamedIds {
    const ids: StreamedIds = {};
    for (const item of this.streaming) ids[item.kind] = item.id;
    return ids;
  }

  /** Closes streamed items (with the parsed turn's text), then sends the other items whole. */
  finish(final: OutputItem[]): OutputItem[] {
    const byId = new Map(final.map((item) => [item.id, item]));
    const output = this.streaming.map((s) => {
      const item = s.done ?? this.close(s, byId.get(s.id) ?? (s.kind === 'reasoning' ? reasoningItem(s.id, s.sent) : messageItem(s.id, s.sent)));
      return { index: s.index, item };
    });
    for (const item of final) {
      if (!this.streaming.some((s) => s.id === item.id)) output.push({ index: this.nextIndex, item: this.whole(item) });
    }
    return output.sort((a, b) => a.index - b.index).map((o) => o.item);
  }

  private advance(kind: StreamingItem['kind'], visible: string): void {
    let item = this.streaming.find((s) => s.kind === kind);
    if (!item) {
      if (!visible) return;
      // Text follows the reasoning, which is then complete.
      const reasoning = this.streaming.find((s) => s.kind === 'reasoning' && !s.done);
      if (kind === 'message' && reasoning) this.close(reasoning, reasoningItem(reasoning.id, reasoning.sent));
      item = { kind, id: newId(kind === 'reasoning' ? 'rs_' : 'msg_'), index: this.nextIndex, sent: '' };
      this.streaming.push(item);
      this.open(item.kind, item.id);
    }
    if (item.done || visible.length <= item.sent.length || !visible.startsWith(item.sent)) return;
    this.delta(item, visible.slice(item.sent.length));
    item.sent = visible;
  }

  private open(kind: StreamingItem['kind'], id: string): void {
    const output_index = this.nextIndex;
    if (kind === 'reasoning') {
      this.events.send('response.output_item.added', { output_index, item: { id, type: 'reasoning', summary: [] } });
      this.events.send('response.reasoning_summary_part.added', { item_id: id, output_index, summary_index: 0, part: { type: 'summary_text', text: '' } });
    } else {
      this.events.send('response.output_item.added', { output_index, item: { id, type: 'message', status: 'in_progress', role: 'assistant', content: [] } });
      this.events.send('response.content_part.added', { item_id: id, output_index, content_index: 0, part: outputText('') });
    }
  }

  private delta(item: StreamingItem, delta: string): void {
    if (item.kind === 'reasoning') {
      this.events.send('response.reasoning_summary_text.delta', { item_id: item.id, output_index: item.index, summary_index: 0, delta });
    } else {
      this.events.send('response.output_text.delta', { item_id: item.id, output_index: item.index, content_index: 0, delta, logprobs: [] });
    }
  }

  /** Sends what the parsed turn adds to the streamed text, then the item's `.done` events. */
  private close(streamed: StreamingItem, item: OutputItem): OutputItem {
    const text = item.type === 'reasoning' ? (item.summary[0]?.text ?? '') : item.type === 'message' ? (item.content[0]?.text ?? '') : '';
    if (text.length > streamed.sent.length && text.startsWith(streamed.sent)) this.delta(streamed, text.slice(streamed.sent.length));
    const ids = { item_id: streamed.id, output_index: streamed.index };
    if (streamed.kind === 'reasoning') {
      this.events.send('response.reasoning_summary_text.done', { ...ids, summary_index: 0, text });
      this.events.send('response.reasoning_summary_part.done', { ...ids, summary_index: 0, part: { type: 'summary_text', text } });
    } else {
      this.events.send('response.output_text.done', { ...ids, content_index: 0, text, logprobs: [] });
      this.events.send('response.content_part.done', { ...ids, content_index: 0, part: outputText(text) });
    }
    this.events.send('response.output_item.done', { output_index: streamed.index, item });
    streamed.done = item;
    this.nextIndex = Math.max(this.nextIndex, streamed.index + 1);
    return item;
  }

  /** An item not streamed as it was generated: calls, and texts the splitter did not see. */
  private whole(item: OutputItem): OutputItem {
    const output_index = this.nextIndex;
    if (item.type === 'reasoning' || item.type === 'message') {
      const streamed: StreamingItem = { kind: item.type, id: item.id, index: output_index, sent: '' };
      this.open(streamed.kind, streamed.id);
      return this.close(streamed, item);
    }
    const ids = { item_id: item.id, output_index };
    if (item.type === 'function_call') {
      this.events.send('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', arguments: '' } });
      this.events.send('response.function_call_arguments.delta', { ...ids, delta: item.arguments });
      this.events.send('response.function_call_arguments.done', { ...ids, name: item.name, arguments: item.arguments });
    } else {
      this.events.send('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', input: '' } });
      this.events.send('response.custom_tool_call_input.delta', { ...ids, delta: item.input });
      this.events.send('response.custom_tool_call_input.done', { ...ids, input: item.input });
    }
    this.events.send('response.output_item.done', { output_index, item });
    this.nextIndex = output_index + 1;
    return item;
  }
}
