import { randomBytes, randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import type { ChatTemplate } from '../gateway/codec/chat-template.js';
import type { ToolCall } from '../gateway/codec/messages.js';
import { ChatCompletionRequest, lowerChatRequest } from '../gateway/protocols/openai-chat.js';
import { InvalidRequestError } from '../gateway/session/errors.js';
import { StreamSplitter } from '../gateway/codec/stream-splitter.js';
import type { SyncTokenizer } from '../gateway/codec/tokenizer.js';
import { parseQwen3Turn } from '../gateway/codec/tool-parser.js';
import type { RequestOutcome } from './engine.js';
import { errorBody, type RouteContext } from './server.js';
import { startEventStream } from './sse.js';

/**
 * `max_tokens` when neither it nor `max_completion_tokens` is given. vLLM takes the rest of the
 * context; the simulator reserves KV for `max_tokens` at admission, so a bounded default keeps
 * requests that omit it from reserving the whole cache.
 */
const DEFAULT_MAX_TOKENS = 4096;

/**
 * The request as the gateway's Chat Completions route validates it (vLLM's fields, lenient on
 * extras), plus the `seed` the simulator samples with.
 */
const ChatRequestSchema = ChatCompletionRequest.extend({ seed: z.number().int().nullish() });

class ChatRequestError extends Error {
  override name = 'ChatRequestError';
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

const toolCallId = () => `chatcmpl-tool-${randomBytes(16).toString('hex')}`;

function toolCallsOut(calls: ToolCall[]) {
  return calls.map((c) => ({
    id: toolCallId(),
    type: 'function' as const,
    function: { name: c.name, arguments: JSON.stringify(c.arguments) },
  }));
}

export interface ChatRouteDeps {
  template: ChatTemplate;
  tokenizer: SyncTokenizer;
  modelName: string;
  /** The model's end-of-turn token (`<|im_end|>`), left out of the parsed turn. */
  endOfTurnId: number;
}

/**
 * `POST /v1/chat/completions` as vLLM and SGLang serve it: the messages rendered with the model's
 * chat template and tokenized, generated on the same engine and policy as `/v1/completions`, the
 * sampled turn parsed back into content, `reasoning_content` and `tool_calls` (Qwen3's
 * `<tool_call>` format), in OpenAI's response or streaming chunk shape, with usage.
 */
export function registerChatRoutes(app: FastifyInstance, context: RouteContext, deps: ChatRouteDeps): void {
  const { template, tokenizer, modelName } = deps;
  const fail = (reply: FastifyReply, error: ChatRequestError) =>
    reply.status(error.status).send(errorBody(error.status, error.message, error.param));

  app.post('/v1/chat/completions', async (req, reply) => {
    const parsed = ChatRequestSchema.safeParse(req.body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      return fail(reply, new ChatRequestError(400, issue.message, issue.path.length > 0 ? issue.path.join('.') : null));
    }
    const body = parsed.data;
    if (body.model && body.model !== modelName) {
      return fail(reply, new ChatRequestError(404, `The model \`${body.model}\` does not exist.`, 'model'));
    }
    let prompt: number[];
    try {
      // Lowered as the gateway lowers it (vLLM parses tool-call arguments the same way).
      const { messages, tools } = lowerChatRequest(body);
      prompt = tokenizer.encode(template.render(messages, { tools, addGenerationPrompt: true }));
    } catch (error) {
      if (error instanceof InvalidRequestError) return fail(reply, new ChatRequestError(400, error.message));
      throw error;
    }
    const maxTokens = body.max_completion_tokens ?? body.max_tokens ?? DEFAULT_MAX_TOKENS;
    if (prompt.length + maxTokens > context.engine.maxRequestTokens) {
      return fail(
        reply,
        new ChatRequestError(
          400,
          `prompt (${prompt.length} tokens) plus max_tokens (${maxTokens}) exceeds the ${context.engine.maxRequestTokens} tokens of KV cache`,
          'max_tokens',
        ),
      );
    }
    const sample = context.plan(prompt, { maxTokens, stopTokenIds: [], topLogprobs: 0 }, body.seed);
    const renderer = context.renderer(sample, true);
    const meta = { id: `chatcmpl-${randomUUID().replace(/-/g, '')}`, created: Math.floor(Date.now() / 1000), model: modelName };
    let cachedTokens = 0;
    let produced = 0;
    const usage = () => ({
      prompt_tokens: prompt.length,
      total_tokens: prompt.length + produced,
      completion_tokens: produced,
      prompt_tokens_details: { cached_tokens: cachedTokens },
    });
    const generate = (onTokens: (total: number) => void): Promise<RequestOutcome> =>
      context.run(req, reply, prompt, sample, maxTokens, {
        onAdmitted: (cached) => (cachedTokens = cached),
        onTokens: (total) => {
          produced = total;
          onTokens(total);
        },
      }).outcome;
    /** vLLM's finish reason: `tool_calls` once calls were parsed, `abort` when the engine ended it. */
    const finishReason = (outcome: RequestOutcome, calls: number) =>
      outcome === 'preempted' ? 'abort' : calls > 0 ? 'tool_calls' : sample.finishReason;

    if (!body.stream) {
      const outcome = await generate(() => {});
      if (outcome === 'aborted') return reply.status(503).send(errorBody(503, 'request aborted'));
      const turn = parseQwen3Turn(renderer.text(produced));
      return {
        ...meta,
        object: 'chat.completion',
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: turn.content || (turn.toolCalls.length > 0 ? null : ''),
              reasoning_content: turn.reasoning ?? null,
              tool_calls: toolCallsOut(turn.toolCalls),
            },
            logprobs: null,
            finish_reason: finishReason(outcome, turn.toolCalls.length),
            stop_reason: null,
          },
        ],
        usage: usage(),
      };
    }

    const res = startEventStream(reply);
    const send = (delta: object, finish: string | null = null) =>
      res.write(
        `data: ${JSON.stringify({ ...meta, object: 'chat.completion.chunk', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`,
      );
    send({ role: 'assistant', content: '' });
    const splitter = new StreamSplitter(tokenizer, deps.endOfTurnId);
    let sent = 0;
    const outcome = await generate((total) => {
      const delta = splitter.push(sample.tokenIds.slice(sent, total));
      sent = total;
      if (delta.reasoning) send({ reasoning_content: delta.reasoning });
      if (delta.content) send({ content: delta.content });
    });
    if (outcome !== 'aborted') {
      // Calls are sent whole once the turn is parsed, each as one delta with its index.
      const calls = outcome === 'finished' ? toolCallsOut(parseQwen3Turn(renderer.text(produced)).toolCalls) : [];
      calls.forEach((call, index) => send({ tool_calls: [{ index, ...call }] }));
      send({}, finishReason(outcome, calls.length));
      if (body.stream_options?.include_usage) {
        res.write(`data: ${JSON.stringify({ ...meta, object: 'chat.completion.chunk', choices: [], usage: usage() })}\n\n`);
      }
      res.write('data: [DONE]\n\n');
    }
    res.end();
  });
}
