import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import type { ChatMessage, TextTokenizer } from '../codec/index.js';
import { streamSplitter } from '../codec/index.js';
import { openEventStream } from './sse.js';
import { callsAllowed, ignoredOptions, reportIgnored } from './request-options.js';
import { disconnectSignal, sessionKeyOf } from '../auth.js';
import type { GatewayDeps } from '../deps.js';
import { GatewayError, InvalidRequestError, UnknownSessionError } from '../session/errors.js';
import type { GatewaySession } from '../session/session.js';
import { presentsCalls, runTurn, type CallsAllowed, type TurnInput, type TurnResult } from '../session/turn-runner.js';
import { newId } from './ids.js';
import { openAiError, sendOpenAiError } from './openai-error.js';
import { lowerInput, lowerTools, presentCall, type LoweredTools } from './openai-responses-lower.js';
import {
  messageItem,
  OutputItemStreamer,
  replyItems,
  ResponseEventStream,
  responseObject,
  usageOut,
  type ResponseEnd,
  type ResponseHeader,
  type StreamedIds,
} from './openai-responses-output.js';
import { ResponsesRequest, StoredItems, type InputItem } from './openai-responses-schema.js';
import { turnTimingOf } from '../turn-timing.js';

/** `previous_response_id` names no response this session stored (or one sent with `store: false`). */
export class PreviousResponseNotFoundError extends InvalidRequestError {
  override name = 'PreviousResponseNotFoundError';
  readonly code = 'previous_response_not_found';
  readonly param = 'previous_response_id';
  constructor(id: string) {
    super(`Previous response with id '${id}' not found.`);
  }
}

function sendError(reply: FastifyReply, error: GatewayError): FastifyReply {
  return sendOpenAiError(reply, error, error instanceof PreviousResponseNotFoundError ? { param: error.param, code: error.code } : undefined);
}

/** A request lowered against its session: the full item history (for storing) and the model call. */
interface PreparedRequest {
  items: InputItem[];
  tools: LoweredTools;
  messages: ChatMessage[];
  calls: CallsAllowed;
}

async function prepare(deps: GatewayDeps, session: GatewaySession, body: ResponsesRequest): Promise<PreparedRequest> {
  let items = body.input;
  if (body.previous_response_id) {
    const stored = await deps.turns.store.getResponse(session.record.sessionId, body.previous_response_id);
    if (!stored) throw new PreviousResponseNotFoundError(body.previous_response_id);
    const earlier = StoredItems.parse([...(JSON.parse(stored.inputJson) as unknown[]), ...(JSON.parse(stored.outputJson) as unknown[])]);
    items = [...earlier, ...body.input];
  }
  const calls = callsAllowed(body.tool_choice, body.parallel_tool_calls);
  const tools = lowerTools(body.tools);
  const messages = lowerInput(body.instructions, items, tools);
  if (messages.length === 0) throw new InvalidRequestError('input has no messages');
  return { items, tools, messages, calls };
}

function budgetMessage(result: Extract<TurnResult, { kind: 'budget' }>): string {
  return `[agent-rollout: the session's ${result.reason} budget is exhausted]`;
}

/**
 * Sampled tokens up to and including `</think>`, or all of them when the turn was cut while still
 * thinking; none when the model has no such tokens.
 */
function reasoningTokenCounter(tokenizer: TextTokenizer): (sampled: number[]) => number {
  let open: number;
  let close: number;
  try {
    open = tokenizer.tokenId('<think>');
    close = tokenizer.tokenId('</think>');
  } catch {
    return () => 0;
  }
  return (sampled) => {
    const end = sampled.indexOf(close);
    if (end >= 0) return end + 1;
    return sampled[0] === open ? sampled.length : 0;
  };
}

/**
 * `POST /v1/responses`, streaming and not. Budget results answer with a final message and
 * `status: "incomplete"`; a turn cut by `max_output_tokens` is incomplete too.
 */
export function registerResponses(app: FastifyInstance, deps: GatewayDeps): void {
  const reasoningTokens = reasoningTokenCounter(deps.turns.codec.tokenizer);

  app.post('/v1/responses', async (request, reply) => {
    const parsedBody = ResponsesRequest.safeParse(request.body);
    if (!parsedBody.success) return sendError(reply, new InvalidRequestError(z.prettifyError(parsedBody.error)));
    const body = parsedBody.data;
    const key = sessionKeyOf(request);
    if (!key) return sendError(reply, new UnknownSessionError());
    let session: GatewaySession;
    let prepared: PreparedRequest;
    try {
      session = await deps.sessions.get(key);
      prepared = await prepare(deps, session, body);
    } catch (error) {
      if (error instanceof GatewayError) return sendError(reply, error);
      throw error;
    }

    const header: ResponseHeader = {
      id: newId('resp_'),
      createdAt: Math.floor(Date.now() / 1000),
      model: body.model ?? deps.modelName,
      instructions: body.instructions ?? null,
      maxOutputTokens: body.max_output_tokens ?? null,
      previousResponseId: body.previous_response_id ?? null,
      store: body.store ?? true,
      temperature: body.temperature ?? null,
      topP: body.top_p ?? null,
      toolChoice: body.tool_choice ?? 'auto',
      tools: (request.body as { tools?: unknown }).tools ?? [],
      parallelToolCalls: body.parallel_tool_calls ?? true,
    };
    const sampled: number[] = [];
    const turn: TurnInput = {
      messages: prepared.messages,
      tools: prepared.tools.specs,
      maxTokens: body.max_output_tokens ?? undefined,
      temperature: body.temperature ?? undefined,
      topP: body.top_p ?? undefined,
      signal: disconnectSignal(reply),
      timing: turnTimingOf(request),
      onTokens: (ids) => sampled.push(...ids),
      calls: prepared.calls,
      presentCall: (call) => presentCall(call, prepared.tools),
    };
    reportIgnored(reply.raw, session, ignoredOptions(request.body), deps.log);
    const endOf = (result: Exclude<TurnResult, { kind: 'aborted' }>, streamed?: StreamedIds): ResponseEnd => {
      if (result.kind === 'budget') {
        return {
          status: 'incomplete',
          incompleteReason: 'max_output_tokens',
          output: [messageItem(newId('msg_'), budgetMessage(result))],
          usage: usageOut(result.usage, 0),
        };
      }
      const cut = result.finishReason === 'length';
      return {
        status: cut ? 'incomplete' : 'completed',
        ...(cut ? { incompleteReason: 'max_output_tokens' as const } : {}),
        output: replyItems(result.reply, prepared.tools, streamed),
        usage: usageOut(result.usage, reasoningTokens(sampled)),
      };
    };
    const save = async (end: ResponseEnd): Promise<void> => {
      // Like the API, `store: false` responses cannot be continued by id (Codex re-sends everything).
      if (!header.store) return;
      await deps.turns.store.saveResponse({
        sessionId: session.record.sessionId,
        responseId: header.id,
        inputJson: JSON.stringify(prepared.items),
        outputJson: JSON.stringify(end.output),
      });
    };

    if (!body.stream) {
      const result = await runTurn(deps.turns, session, turn);
      if (result.kind === 'aborted') return reply;
      const end = endOf(result);
      await save(end);
      return reply.send(responseObject(header, end));
    }

    reply.hijack();
    const res = openEventStream(reply.raw);
    const events = new ResponseEventStream(res);
    const started = responseObject(header, { status: 'in_progress', output: [], usage: null });
    events.send('response.created', { response: started });
    events.send('response.in_progress', { response: started });
    const splitter = streamSplitter(deps.turns.codec, !presentsCalls(turn));
    const streamer = new OutputItemStreamer(events);
    try {
      const result = await runTurn(deps.turns, session, {
        ...turn,
        onTokens: (ids) => {
          sampled.push(...ids);
          streamer.push(splitter.push(ids));
        },
      });
      if (result.kind === 'aborted') return;
      const end = endOf(result, streamer.streamedIds());
      end.output = streamer.finish(end.output);
      await save(end);
      // Sent as `response.completed` even when incomplete: Codex treats `response.incomplete` as
      // an error and retries, where a budget answer must end its turn.
      events.send('response.completed', { response: responseObject(header, end) });
    } catch (error) {
      const { message, type } = openAiError(error, 502);
      const failed = responseObject(header, { status: 'failed', output: [], usage: null, error: { code: type, message } });
      events.send('response.failed', { response: failed });
    } finally {
      res.end();
    }
  });
}
