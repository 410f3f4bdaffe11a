import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ChatMessage, ToolSpec } from '../codec/index.js';
import { streamSplitter } from '../codec/index.js';
import { newId } from './ids.js';
import { openAiError, sendOpenAiError } from './openai-error.js';
import { isPlainChatRequest } from './openai-chat-check.js';
import { openEventStream } from './sse.js';
import { callsAllowed, ignoredOptions, reportIgnored } from './request-options.js';
import { disconnectSignal, sessionKeyOf } from '../auth.js';
import { GatewayError, InvalidRequestError, UnknownSessionError } from '../session/errors.js';
import type { AssistantMessage, CallsAllowed, TurnResult } from '../session/turn-runner.js';
import { presentsCalls, runTurn } from '../session/turn-runner.js';
import { TURN_HEADER, turnPositionOf } from '../session/replay.js';
import type { GatewayDeps } from '../deps.js';
import { JsonText, Name, REQUEST_LIMITS, Text } from '../limits.js';
import { turnTimingOf } from '../turn-timing.js';

const TextPart = z.object({ type: Name, text: Text.optional() }).passthrough();
const Content = z.union([Text, z.array(TextPart).max(REQUEST_LIMITS.maxParts), z.null()]).optional();
const ToolCallIn = z
  .object({
    id: Name.optional(),
    type: z.literal('function').optional(),
    function: z.object({ name: Name, arguments: JsonText }).passthrough(),
  })
  .passthrough();
const MessageIn = z.discriminatedUnion('role', [
  z.object({ role: z.enum(['system', 'developer', 'user']), content: Content }).passthrough(),
  z
    .object({
      role: z.literal('assistant'),
      content: Content,
      reasoning_content: Text.nullish(),
      tool_calls: z.array(ToolCallIn).max(REQUEST_LIMITS.maxParts).nullish(),
    })
    .passthrough(),
  z.object({ role: z.literal('tool'), content: Content, tool_call_id: Name.optional() }).passthrough(),
]);
const ToolIn = z
  .object({
    type: z.literal('function'),
    function: z
      .object({ name: Name.min(1), description: Text.optional(), parameters: z.record(z.string(), z.unknown()).optional() })
      .passthrough(),
  })
  .passthrough();

/** OpenAI Chat Completions request: lenient on extra fields, strict on what shapes the tokens. */
export const ChatCompletionRequest = z
  .object({
    model: Name.optional(),
    messages: z.array(MessageIn).min(1).max(REQUEST_LIMITS.maxMessages),
    tools: z.array(ToolIn).max(REQUEST_LIMITS.maxTools).optional(),
    tool_choice: z.unknown().optional(),
    parallel_tool_calls: z.boolean().nullish(),
    max_tokens: z.number().int().positive().nullish(),
    max_completion_tokens: z.number().int().positive().nullish(),
    temperature: z.number().min(0).max(2).nullish(),
    top_p: z.number().gt(0).max(1).nullish(),
    n: z.literal(1, { message: 'only n = 1 is supported' }).nullish(),
    stream: z.boolean().nullish(),
    stream_options: z.object({ include_usage: z.boolean().optional() }).passthrough().nullish(),
  })
  .passthrough();
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>;

function textOf(content: z.infer<typeof Content>): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => part.text ?? '').join('');
}

/** Lowers a request to the codec's messages; tool-call arguments must be JSON objects. */
export function lowerChatRequest(body: ChatCompletionRequest): { messages: ChatMessage[]; tools: ToolSpec[] | undefined } {
  const messages = body.messages.map((m, i): ChatMessage => {
    switch (m.role) {
      case 'assistant': {
        const out: ChatMessage = { role: 'assistant', content: textOf(m.content) };
        if (m.reasoning_content) out.reasoning_content = m.reasoning_content;
        if (m.tool_calls && m.tool_calls.length > 0) {
          out.tool_calls = m.tool_calls.map((c, j) => ({ name: c.function.name, arguments: parseArguments(c.function.arguments, i, j) }));
        }
        return out;
      }
      case 'tool':
        return { role: 'tool', content: textOf(m.content), tool_call_id: m.tool_call_id };
      case 'developer':
        return { role: 'system', content: textOf(m.content) };
      default:
        return { role: m.role, content: textOf(m.content) };
    }
  });
  // Only what the model should see: client extras such as `strict` stay out of the prompt.
  const tools = body.tools?.map((t): ToolSpec => {
    const { name, description, parameters } = t.function;
    return { type: 'function', function: { name, ...(description !== undefined ? { description } : {}), ...(parameters ? { parameters } : {}) } };
  });
  return { messages, tools };
}

function parseArguments(json: string, message: number, call: number): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(json || '{}');
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // reported below
  }
  throw new InvalidRequestError(`messages[${message}].tool_calls[${call}].function.arguments is not a JSON object`);
}

/** The request as the schema returns it; the hand check spares the copy zod makes of a valid one. */
function parseChatRequest(body: unknown): ChatCompletionRequest | InvalidRequestError {
  if (isPlainChatRequest(body)) return body;
  const parsed = ChatCompletionRequest.safeParse(body);
  return parsed.success ? parsed.data : new InvalidRequestError(z.prettifyError(parsed.error));
}

function toolCallsOut(reply: AssistantMessage) {
  return reply.tool_calls?.map((c) => ({ id: newId('call_'), type: 'function' as const, function: { name: c.name, arguments: JSON.stringify(c.arguments) } }));
}

function budgetMessage(result: Extract<TurnResult, { kind: 'budget' }>): string {
  return `[agent-rollout: the session's ${result.reason} budget is exhausted]`;
}

function usageOut(usage: { promptTokens: number; completionTokens: number; cachedTokens: number }) {
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
    prompt_tokens_details: { cached_tokens: usage.cachedTokens },
  };
}

/** `POST /v1/chat/completions`, streaming and not. */
export function registerChatCompletions(app: FastifyInstance, deps: GatewayDeps): void {
  app.post('/v1/chat/completions', async (request, reply) => {
    const body = parseChatRequest(request.body);
    if (body instanceof InvalidRequestError) return sendOpenAiError(reply, body);
    const key = sessionKeyOf(request);
    if (!key) return sendOpenAiError(reply, new UnknownSessionError());
    let lowered: ReturnType<typeof lowerChatRequest>;
    let session;
    let calls: CallsAllowed;
    try {
      session = await deps.sessions.get(key);
      lowered = lowerChatRequest(body);
      calls = callsAllowed(body.tool_choice, body.parallel_tool_calls);
    } catch (error) {
      if (error instanceof GatewayError) return sendOpenAiError(reply, error);
      throw error;
    }
    const id = newId('chatcmpl-');
    const created = Math.floor(Date.now() / 1000);
    const model = body.model ?? deps.modelName;
    const signal = disconnectSignal(reply);
    const turn = {
      ...lowered,
      maxTokens: body.max_completion_tokens ?? body.max_tokens ?? undefined,
      temperature: body.temperature ?? undefined,
      topP: body.top_p ?? undefined,
      signal,
      timing: turnTimingOf(request),
      turnPosition: turnPositionOf(request.headers[TURN_HEADER]),
      calls,
    };
    reportIgnored(reply.raw, session, ignoredOptions(body), deps.log);

    if (!body.stream) {
      const result = await runTurn(deps.turns, session, turn);
      if (result.kind === 'aborted') return reply;
      const message =
        result.kind === 'budget'
          ? { role: 'assistant', content: budgetMessage(result) }
          : {
              role: 'assistant',
              content: result.reply.content || (result.reply.tool_calls ? null : ''),
              reasoning_content: result.reply.reasoning_content ?? null,
              tool_calls: toolCallsOut(result.reply),
            };
      return reply.send({
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [{ index: 0, message, finish_reason: result.kind === 'budget' ? 'length' : result.finishReason }],
        usage: usageOut(result.usage),
      });
    }

    reply.hijack();
    const res = openEventStream(reply.raw);
    const send = (delta: object, finishReason: string | null = null) =>
      res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`);
    send({ role: 'assistant', content: '' });
    const splitter = streamSplitter(deps.turns.codec, !presentsCalls(turn));
    let sentContent = '';
    try {
      const result = await runTurn(deps.turns, session, {
        ...turn,
        onTokens: (ids) => {
          const d = splitter.push(ids);
          if (d.reasoning) send({ reasoning_content: d.reasoning });
          if (d.content) send({ content: d.content });
          sentContent += d.content;
        },
      });
      if (result.kind === 'aborted') return;
      if (result.kind === 'budget') send({ content: budgetMessage(result) }, 'length');
      else {
        // Call text presented as content (no tools, `tool_choice: "none"`) was held back as a call.
        const { content } = result.reply;
        if (content.length > sentContent.length && content.startsWith(sentContent)) send({ content: content.slice(sentContent.length) });
        const calls = toolCallsOut(result.reply) ?? [];
        calls.forEach((c, index) => send({ tool_calls: [{ index, ...c }] }));
        send({}, result.finishReason);
      }
      if (body.stream_options?.include_usage) {
        res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: usageOut(result.usage) })}\n\n`);
      }
      res.write('data: [DONE]\n\n');
    } catch (error) {
      const { message, type } = openAiError(error, 502);
      res.write(`data: ${JSON.stringify({ error: { message, type, param: null, code: null } })}\n\n`);
    } finally {
      res.end();
    }
  });
}
