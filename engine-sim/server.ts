import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { ChatTemplate } from '../gateway/codec/chat-template.js';
import type { SyncTokenizer } from '../gateway/codec/tokenizer.js';
import { registerChatRoutes } from './chat.js';
import type { Engine, RequestOutcome } from './engine.js';
import { renderMetrics } from './metrics.js';
import { sampleOutput, TextRenderer, type Sample, type SampleOptions } from './output.js';
import { createRng, mixSeed } from './prng.js';
import type { ScriptedPolicy } from './script.js';
import { registerSglangRoutes } from './sglang.js';
import { registerWeightRoutes, WeightVersion } from './weights.js';
import { startEventStream } from './sse.js';
import { NonEmptyTokenIdList, TokenIdList } from './token-ids.js';

/** vLLM's default `--max-logprobs`: more alternatives than this per token is a 400. */
const MAX_LOGPROBS = 20;
/** Token-id prompts of 128k tokens are about 1 MB of JSON; leave ample room. */
const BODY_LIMIT_BYTES = 64 * 1024 * 1024;
/** vLLM's `CompletionRequest.max_tokens` default. */
const DEFAULT_MAX_TOKENS = 16;

const TokenIds = NonEmptyTokenIdList('prompt');

/** The `/v1/completions` fields the simulator reads; other fields are accepted and ignored. */
export const CompletionRequestSchema = z.object({
  model: z.string().nullish(),
  prompt: z.union([TokenIds, z.array(TokenIds).length(1)], {
    error:
      'prompt must be a non-empty list of token ids (or a list holding one); text prompts are not supported',
  }),
  max_tokens: z.number().int().min(1).nullish(),
  /** Accepted for compatibility; the scripted policy does not depend on it. */
  temperature: z.number().min(0).nullish(),
  /** Accepted for compatibility; the scripted policy does not depend on it. */
  top_p: z.number().gt(0).max(1).nullish(),
  seed: z.number().int().nullish(),
  logprobs: z.number().int().min(0).max(MAX_LOGPROBS).nullish(),
  return_token_ids: z.boolean().nullish(),
  return_tokens_as_token_ids: z.boolean().nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().nullish() }).nullish(),
  stop_token_ids: TokenIdList.nullish(),
  skip_special_tokens: z.boolean().nullish(),
  request_id: z.string().nullish(),
  n: z.literal(1, { error: 'engine-sim generates one choice per request (n must be 1)' }).nullish(),
});

export interface ServerDeps {
  engine: Engine;
  policy: ScriptedPolicy;
  tokenizer: SyncTokenizer;
  /** The model's chat template, for `/v1/chat/completions`. */
  chatTemplate: ChatTemplate;
  modelName: string;
  seed: number;
  /** SGLang's `--incremental-streaming-output`: `/generate` chunks carry only what is new. */
  sglangIncrementalStreaming: boolean;
  /** The weight version served at start (SGLang's `--weight-version`). */
  weightVersion: string;
}

/** What the routes of both APIs share: one engine, one policy, one request counter. */
export interface RouteContext {
  engine: Engine;
  /** The weight version the engine serves now. */
  weightVersion: WeightVersion;
  /** Plans a request's output. `seed` overrides the engine seed mixed with the request number. */
  plan(prompt: number[], options: SampleOptions, seed: number | null | undefined): Sample;
  /** Text of the sample's first tokens as the detokenizer shows it. */
  renderer(sample: Sample, skipSpecialTokens: boolean): TextRenderer;
  /** Decoded text of one token. */
  tokenText(id: number): string;
  /**
   * Runs a request on the engine until it finishes or is aborted (by its client, or `preempted` by
   * the engine); a client that goes away before its response is complete aborts it. Returns the
   * abort function and the outcome.
   */
  run(
    req: FastifyRequest,
    reply: FastifyReply,
    prompt: number[],
    sample: Sample,
    maxTokens: number,
    events: { onAdmitted(cachedTokens: number): void; onTokens(total: number): void },
  ): { abort: () => void; outcome: Promise<RequestOutcome> };
}

type CompletionLogProbs = {
  text_offset: number[];
  token_logprobs: number[];
  tokens: string[];
  top_logprobs: Record<string, number>[];
};

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

const ERROR_TYPES: Record<number, string> = {
  400: 'BadRequestError',
  404: 'NotFoundError',
  413: 'BadRequestError',
  415: 'BadRequestError',
  503: 'ServiceUnavailableError',
};

/** OpenAI's error envelope, as vLLM fills it (`code` is the HTTP status). */
export function errorBody(status: number, message: string, param: string | null = null) {
  return {
    error: { message, type: ERROR_TYPES[status] ?? 'InternalServerError', param, code: status },
  };
}

/** Python's `len` of a string (code points), which vLLM's `text_offset` counts in. */
function pyLen(s: string): number {
  return [...s].length;
}

export interface SimServer {
  app: FastifyInstance;
  weightVersion: WeightVersion;
  /** `POST /abort_request` calls received. */
  abortRequestsReceived(): number;
}

/** The simulator's HTTP server: vLLM's OpenAI-compatible routes and SGLang's native ones. */
export function createServer(deps: ServerDeps): SimServer {
  const { engine, policy, tokenizer, modelName } = deps;
  // The chat-control tokens: the `<|…|>` tokens Qwen flags special and a completion can contain.
  // (`<think>`, `<tool_call>` and the like are not special and stay in the text, as in vLLM.)
  const specialIds = new Set(
    ['<|endoftext|>', '<|im_start|>', '<|im_end|>'].map((t) => tokenizer.tokenId(t)),
  );
  const tokenTexts = new Map<number, string>();
  const tokenText = (id: number) => {
    let text = tokenTexts.get(id);
    if (text === undefined) tokenTexts.set(id, (text = tokenizer.decode([id])));
    return text;
  };
  const finishedByReason = { stop: 0, length: 0, abort: 0 };
  let requestCount = 0;
  const weightVersion = new WeightVersion(deps.weightVersion);

  const context: RouteContext = {
    engine,
    weightVersion,
    plan: (prompt, options, seed) =>
      sampleOutput(policy, prompt, options, createRng(seed ?? mixSeed(deps.seed, requestCount++))),
    renderer: (sample, skipSpecialTokens) =>
      new TextRenderer(sample, skipSpecialTokens, (ids) => tokenizer.decode(ids), specialIds),
    tokenText,
    run(req, reply, prompt, sample, maxTokens, events) {
      let abort = () => {};
      const outcome = new Promise<RequestOutcome>((resolve) => {
        abort = engine.submit(
          prompt,
          { tokenIds: sample.tokenIds, maxTokens },
          {
            onAdmitted: events.onAdmitted,
            onTokens: events.onTokens,
            onEnd: (end) => {
              finishedByReason[end === 'finished' ? sample.finishReason : 'abort']++;
              resolve(end);
            },
          },
        );
      });
      // Closed before the response was complete: the client is gone, so stop generating.
      const onClose = () => {
        if (!reply.raw.writableFinished) abort();
      };
      reply.raw.on('close', onClose);
      if (req.raw.socket.destroyed) onClose();
      return { abort, outcome };
    },
  };

  const app = Fastify({ bodyLimit: BODY_LIMIT_BYTES, forceCloseConnections: true });

  app.setErrorHandler((err: Error & { statusCode?: number }, _req, reply) => {
    const status = err instanceof HttpError ? err.status : (err.statusCode ?? 500);
    void reply
      .status(status)
      .send(errorBody(status, err.message, err instanceof HttpError ? err.param : null));
  });
  app.setNotFoundHandler((req, reply) => {
    void reply
      .status(404)
      .send(errorBody(404, `${req.method} ${req.url} is not served by engine-sim`));
  });

  app.get('/health', async (_req, reply) => reply.status(200).send());

  app.get('/v1/models', async () => ({
    object: 'list',
    data: [
      {
        id: modelName,
        object: 'model',
        created: Math.floor(Date.now() / 1000),
        owned_by: 'vllm',
        root: modelName,
        parent: null,
        // The most one request can occupy: its prompt plus max_tokens must fit in the KV cache.
        max_model_len: engine.maxRequestTokens,
        permission: [],
      },
    ],
  }));

  app.get('/metrics', async (_req, reply) => {
    const { blockSize, numBlocks } = engine.cacheConfig();
    const text = renderMetrics({
      modelName,
      stats: engine.stats(),
      blockSize,
      numBlocks,
      finishedByReason,
    });
    return reply.type('text/plain; version=0.0.4; charset=utf-8').send(text);
  });

  app.post('/v1/completions', async (req, reply) => {
    const parsed = CompletionRequestSchema.safeParse(req.body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new HttpError(400, issue.message, issue.path.length > 0 ? issue.path.join('.') : null);
    }
    const body = parsed.data;
    if (body.model && body.model !== modelName) {
      throw new HttpError(404, `The model \`${body.model}\` does not exist.`, 'model');
    }
    const prompt = (Array.isArray(body.prompt[0]) ? body.prompt[0] : body.prompt) as number[];
    const maxTokens = body.max_tokens ?? DEFAULT_MAX_TOKENS;
    if (prompt.length + maxTokens > engine.maxRequestTokens) {
      throw new HttpError(
        400,
        `prompt (${prompt.length} tokens) plus max_tokens (${maxTokens}) exceeds the ${engine.maxRequestTokens} tokens of KV cache`,
        'max_tokens',
      );
    }
    const header = req.headers['x-request-id'];
    // As vLLM: the header wins over the body's request_id; the response id is prefixed.
    const baseId =
      (typeof header === 'string' && header) || body.request_id || randomUUID().replace(/-/g, '');
    const id = `cmpl-${baseId}`;
    const sample = context.plan(
      prompt,
      { maxTokens, stopTokenIds: body.stop_token_ids ?? [], topLogprobs: body.logprobs ?? 0 },
      body.seed,
    );
    const out = new OutputRenderer(
      sample,
      context.renderer(sample, body.skip_special_tokens !== false),
      (id) => (body.return_tokens_as_token_ids ? `token_id:${id}` : tokenText(id)),
    );
    const meta = {
      id,
      object: 'text_completion',
      created: Math.floor(Date.now() / 1000),
      model: modelName,
    };
    let cachedTokens = 0;
    const usage = (completionTokens: number) => ({
      prompt_tokens: prompt.length,
      total_tokens: prompt.length + completionTokens,
      completion_tokens: completionTokens,
      prompt_tokens_details: { cached_tokens: cachedTokens },
    });

    let produced = 0;
    /** Runs the request on the engine; resolves when it finished or was aborted. */
    const generate = (onTokens: (total: number) => void) =>
      context.run(req, reply, prompt, sample, maxTokens, {
        onAdmitted: (cached) => (cachedTokens = cached),
        onTokens: (total) => {
          produced = total;
          onTokens(total);
        },
      }).outcome;
    /** vLLM's finish reason once the request ended: the engine's abort ends it as `abort`. */
    const finishReason = (outcome: RequestOutcome) => (outcome === 'preempted' ? 'abort' : sample.finishReason);

    reply.header('x-request-id', baseId);

    if (!body.stream) {
      const outcome = await generate(() => {});
      // vLLM keeps no weight version; the simulator names the weights that sampled the answer.
      reply.header('x-weight-version', weightVersion.value);
      if (outcome === 'aborted') return reply.status(503).send(errorBody(503, 'request aborted'));
      const n = produced;
      return {
        ...meta,
        choices: [
          {
            index: 0,
            text: out.text(n),
            logprobs: body.logprobs == null ? null : out.logprobs(0, n, 0),
            finish_reason: finishReason(outcome),
            stop_reason: outcome === 'finished' ? sample.stopReason : null,
            token_ids: body.return_token_ids ? sample.tokenIds.slice(0, n) : null,
            prompt_logprobs: null,
            prompt_token_ids: body.return_token_ids ? prompt : null,
          },
        ],
        usage: usage(n),
      };
    }

    // Sent at once, as vLLM does: a stream's `x-weight-version` names the weights when it arrived.
    const res = startEventStream(reply, { 'x-request-id': baseId, 'x-weight-version': weightVersion.value });
    const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
    let sent = 0;
    let sentText = '';
    // One chunk per engine step that produced tokens for this request, as the tokens appear.
    const outcome = await generate((total) => {
      const final = total === sample.tokenIds.length;
      const text = out.text(total);
      const choice = {
        index: 0,
        text: text.slice(sentText.length),
        logprobs: body.logprobs == null ? null : out.logprobs(sent, total, pyLen(sentText)),
        finish_reason: final ? sample.finishReason : null,
        stop_reason: final ? sample.stopReason : null,
        // vLLM sends the prompt ids once, with the first output.
        prompt_token_ids: body.return_token_ids && sent === 0 ? prompt : null,
        token_ids: body.return_token_ids ? sample.tokenIds.slice(sent, total) : null,
      };
      sent = total;
      sentText = text;
      send({ ...meta, choices: [choice] });
    });
    if (outcome === 'preempted') {
      // Aborted by the engine (a pause for a weight update): the stream ends with finish_reason abort.
      const choice = { index: 0, text: '', logprobs: null, finish_reason: 'abort', stop_reason: null, token_ids: body.return_token_ids ? [] : null };
      send({ ...meta, choices: [choice] });
    }
    if (outcome !== 'aborted') {
      // vLLM's StreamOptions defaults include_usage to true once stream_options is given.
      if (body.stream_options && body.stream_options.include_usage !== false) {
        send({ ...meta, choices: [], usage: usage(sent) });
      }
      res.write('data: [DONE]\n\n');
    }
    res.end();
  });

  registerChatRoutes(app, context, {
    template: deps.chatTemplate,
    tokenizer,
    modelName,
    endOfTurnId: policy.endOfTurnId,
  });
  const sglang = registerSglangRoutes(app, context, {
    incrementalStreaming: deps.sglangIncrementalStreaming,
  });
  registerWeightRoutes(app, engine, weightVersion);
  return { app, weightVersion, abortRequestsReceived: sglang.abortRequestsReceived };
}

/** Text and logprobs of a sample's first tokens in vLLM's completion shape. */
class OutputRenderer {
  constructor(
    private readonly sample: Sample,
    private readonly renderer: TextRenderer,
    /** A token as `tokens` and `top_logprobs` name it. */
    private readonly label: (id: number) => string,
  ) {}

  /** Visible text of the first `n` tokens; `n` never decreases between calls. */
  text(n: number): string {
    return this.renderer.text(n);
  }

  /** The logprobs object for tokens [from, to), offsets starting at `initialOffset`. */
  logprobs(from: number, to: number, initialOffset: number): CompletionLogProbs {
    const result: CompletionLogProbs = {
      text_offset: [],
      token_logprobs: [],
      tokens: [],
      top_logprobs: [],
    };
    let offset = initialOffset;
    for (let i = from; i < to; i++) {
      const token = this.label(this.sample.tokenIds[i]!);
      const lp = this.sample.logprobs[i]!;
      const top: Record<string, number> = { [token]: lp };
      for (const [alt, altLp] of this.sample.alternatives?.[i] ?? []) {
        const altToken = this.label(alt);
        if (!(altToken in top)) top[altToken] = altLp;
      }
      result.text_offset.push(offset);
      result.token_logprobs.push(lp);
      result.tokens.push(token);
      result.top_logprobs.push(top);
      offset += pyLen(token);
    }
    return result;
  }
}
