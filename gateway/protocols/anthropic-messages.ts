import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { disconnectSignal, sessionKeyOf } from '../auth.js';
import { BackendError } from '../backends/backend.js';
import { streamSplitter } from '../codec/index.js';
import type { GatewayDeps } from '../deps.js';
import { GatewayError, InvalidRequestError, UnknownSessionError } from '../session/errors.js';
import type { GatewaySession } from '../session/session.js';
import { presentsCalls, runTurn, type TurnInput, type TurnResult } from '../session/turn-runner.js';
import { lowerAnthropicRequest } from './anthropic-lower.js';
import {
  budgetText,
  contentOut,
  jsonAnswer,
  jsonSchemaOf,
  newMessageId,
  stopReasonOf,
  usageOut,
  type ContentBlockOut,
} from './anthropic-output.js';
import { CountTokensRequest, MessagesRequest } from './anthropic-schema.js';
import { AnthropicEventStream } from './anthropic-stream.js';
import { callsAllowed, ignoredOptions, reportIgnored } from './request-options.js';
import { turnTimingOf } from '../turn-timing.js';

/** Anthropic's error `type` for an HTTP status; 429 and 5xx make clients retry with backoff. */
export function anthropicErrorType(status: number): string {
  switch (status) {
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
    case 529:
      return 'overloaded_error';
    default:
      return status < 500 ? 'invalid_request_error' : 'api_error';
  }
}

function statusOf(error: unknown): number {
  if (error instanceof GatewayError || error instanceof BackendError) return error.status;
  return (error as { statusCode?: number }).statusCode ?? 500;
}

/** Anthropic's envelope `{"type":"error","error":{"type","message"}}` for every failure. */
export function anthropicErrorHandler(
  error: unknown,
  _request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  const status = statusOf(error);
  return reply
    .code(status)
    .send({
      type: 'error',
      error: { type: anthropicErrorType(status), message: (error as Error).message },
    });
}

function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new InvalidRequestError(z.prettifyError(parsed.error));
  return parsed.data;
}

function sessionOf(deps: GatewayDeps, request: FastifyRequest): Promise<GatewaySession> {
  const key = sessionKeyOf(request);
  if (!key) return Promise.reject(new UnknownSessionError());
  return deps.sessions.get(key);
}

/**
 * `POST /v1/messages` (streaming and not) and `POST /v1/messages/count_tokens`. Call inside an
 * encapsulated plugin: it installs the Anthropic error envelope for its routes.
 */
export function registerAnthropicMessages(app: FastifyInstance, deps: GatewayDeps): void {
  app.setErrorHandler(anthropicErrorHandler);

  app.post('/v1/messages/count_tokens', async (request) => {
    await sessionOf(deps, request);
    const { messages, tools } = lowerAnthropicRequest(parseBody(CountTokensRequest, request.body));
    // The prompt a new chain would send: full template render with the generation prompt.
    return { input_tokens: (await deps.turns.codec.encoder.encodeFirst(messages, tools)).length };
  });

  app.post('/v1/messages', async (request, reply) => {
    const session = await sessionOf(deps, request);
    const body = parseBody(MessagesRequest, request.body);
    const turn: TurnInput = {
      ...lowerAnthropicRequest(body),
      maxTokens: body.max_tokens,
      temperature: body.temperature,
      topP: body.top_p,
      signal: disconnectSignal(reply),
      timing: turnTimingOf(request),
      calls: callsAllowed(body.tool_choice, undefined),
    };
    reportIgnored(reply.raw, session, ignoredOptions(request.body), deps.log);
    const answer: Answer = {
      id: newMessageId(),
      model: body.model ?? deps.modelName,
      schema: jsonSchemaOf(body),
    };
    if (body.stream) return streamMessage(deps, session, turn, answer, reply);

    const result = await runTurn(deps.turns, session, turn);
    if (result.kind === 'aborted') return reply;
    let content: ContentBlockOut[];
    if (result.kind === 'budget') content = [{ type: 'text', text: budgetText(result) }];
    else
      content = contentOut(
        result.reply,
        answer.schema ? jsonAnswer(result.reply.content, answer.schema) : result.reply.content,
      );
    return reply.send({
      id: answer.id,
      type: 'message',
      role: 'assistant',
      model: answer.model,
      content,
      stop_reason: stopReasonOf(result),
      stop_sequence: null,
      usage: usageOut(result.usage),
    });
  });
}

interface Answer {
  id: string;
  model: string;
  /** Set for a structured-output request: the text must be JSON. */
  schema: Record<string, unknown> | undefined;
}

async function streamMessage(
  deps: GatewayDeps,
  session: GatewaySession,
  turn: TurnInput,
  answer: Answer,
  reply: FastifyReply,
): Promise<void> {
  reply.hijack();
  const stream = new AnthropicEventStream(reply.raw);
  // Sent once the prompt is encoded, so `message_start` carries its size; the cached share is
  // known only at the end and `message_delta` carries the exact split.
  let started = false;
  const start = (promptTokens: number) => {
    if (started) return;
    started = true;
    stream.event('message_start', {
      type: 'message_start',
      message: {
        id: answer.id,
        type: 'message',
        role: 'assistant',
        model: answer.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: usageOut({ promptTokens, completionTokens: 0, cachedTokens: 0 }),
      },
    });
  };
  const splitter = streamSplitter(deps.turns.codec, !presentsCalls(turn));
  let result: TurnResult;
  try {
    result = await runTurn(deps.turns, session, {
      ...turn,
      onPrompt: start,
      onTokens: (ids) => {
        const delta = splitter.push(ids);
        stream.delta('thinking', delta.reasoning);
        // Structured output is checked whole before it is sent.
        if (!answer.schema) stream.delta('text', delta.content);
      },
    });
  } catch (error) {
    start(0);
    stream.fail(anthropicErrorType(statusOf(error)), (error as Error).message);
    return;
  }
  start(result.kind === 'aborted' ? 0 : result.usage.promptTokens);
  if (result.kind === 'aborted') return stream.end();
  if (result.kind === 'budget') stream.delta('text', budgetText(result));
  else {
    const { content, tool_calls: calls = [] } = result.reply;
    if (answer.schema) stream.delta('text', jsonAnswer(content, answer.schema));
    // Text after a tool call is parsed into the content but never streamed: send the rest.
    else if (content.startsWith(stream.sentText))
      stream.delta('text', content.slice(stream.sentText.length));
    for (const call of calls) stream.toolUse(call.name, call.arguments);
    if (calls.length === 0) stream.ensureText();
  }
  stream.finish(stopReasonOf(result), usageOut(result.usage));
}
