import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { TextTokenizer } from '../gateway/codec/tokenizer.js';
import type { Engine } from './engine.js';
import { renderMetrics } from './metrics.js';
import { createRng, mixSeed, type Rng } from './prng.js';
import type { ScriptedPolicy } from './script.js';

/** vLLM's default `--max-logprobs`: more alternatives than this per token is a 400. */
const MAX_LOGPROBS = 20;
/** Token-id prompts of 128k tokens are about 1 MB of JSON; leave ample room. */
const BODY_LIMIT_BYTES = 64 * 1024 * 1024;
/** vLLM's `CompletionRequest.max_tokens` default. */
const DEFAULT_MAX_TOKENS = 16;

const TokenId = z.number().int().min(0);
const TokenIds = z.array(TokenId).min(1, 'prompt must not be empty');

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
  stop_token_ids: z.array(TokenId).nullish(),
  skip_special_tokens: z.boolean().nullish(),
  request_id: z.string().nullish(),
  n: z.literal(1, { error: 'engine-sim generates one choice per request (n must be 1)' }).nullish(),
});
type CompletionRequest = z.output<typeof CompletionRequestSchema>;

export interface ServerDeps {
  engine: Engine;
  policy: ScriptedPolicy;
  tokenizer: TextTokenizer;
  modelName: string;
  seed: number;
}

/** The sampled output of one request, fixed when it arrives and revealed as the engine steps. */
interface Sample {
  tokenIds: number[];
  logprobs: number[];
  /** Per token: alternatives as [token id, logprob], when `logprobs` > 0 was asked for. */
  alternatives: [number, number][][] | null;
  finishReason: 'stop' | 'length';
  /** The `stop_token_ids` entry that ended the output, as vLLM reports it (null for EOS). */
  stopReason: number | null;
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
function errorBody(status: number, message: string, param: string | null = null) {
  return {
    error: { message, type: ERROR_TYPES[status] ?? 'InternalServerError', param, code: status },
  };
}

/** Python's `len` of a string (code points), which vLLM's `text_offset` counts in. */
function pyLen(s: string): number {
  return [...s].length;
}

export function createServer(deps: ServerDeps): FastifyInstance {
  const { engine, policy, tokenizer, modelName } = deps;
  const eos = policy.endOfTurnId;
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
    const rng = createRng(body.seed ?? mixSeed(deps.seed, requestCount++));
    const sample = sampleOutput(body, prompt, maxTokens, rng);
    const out = new OutputRenderer(
      sample,
      body,
      tokenText,
      (ids) => tokenizer.decode(ids),
      specialIds,
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

    /** Runs the request on the engine; resolves when it finished or was aborted. */
    const generate = (onTokens: (total: number) => void) =>
      new Promise<'finished' | 'aborted'>((resolve) => {
        const abort = engine.submit(
          prompt,
          { tokenIds: sample.tokenIds, maxTokens },
          {
            onAdmitted: (cached) => (cachedTokens = cached),
            onTokens,
            onEnd: (outcome) => {
              finishedByReason[outcome === 'aborted' ? 'abort' : sample.finishReason]++;
              resolve(outcome);
            },
          },
        );
        // Closed before the response was complete: the client is gone, so stop generating.
        const onClose = () => {
          if (!reply.raw.writableFinished) abort();
        };
        reply.raw.on('close', onClose);
        if (req.raw.socket.destroyed) onClose();
      });

    reply.header('x-request-id', baseId);

    if (!body.stream) {
      if ((await generate(() => {})) === 'aborted')
        return reply.status(503).send(errorBody(503, 'request aborted'));
      const n = sample.tokenIds.length;
      return {
        ...meta,
        choices: [
          {
            index: 0,
            text: out.text(n),
            logprobs: body.logprobs == null ? null : out.logprobs(0, n, 0),
            finish_reason: sample.finishReason,
            stop_reason: sample.stopReason,
            token_ids: body.return_token_ids ? sample.tokenIds : null,
            prompt_logprobs: null,
            prompt_token_ids: body.return_token_ids ? prompt : null,
          },
        ],
        usage: usage(n),
      };
    }

    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-request-id': baseId,
    });
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
    if (outcome === 'finished') {
      // vLLM's StreamOptions defaults include_usage to true once stream_options is given.
      if (body.stream_options && body.stream_options.include_usage !== false) {
        send({ ...meta, choices: [], usage: usage(sent) });
      }
      res.write('data: [DONE]\n\n');
    }
    res.end();
  });

  /** Plans the output: the policy's turn, cut at a stop token id or at max_tokens, with logprobs. */
  function sampleOutput(
    body: CompletionRequest,
    prompt: number[],
    maxTokens: number,
    rng: Rng,
  ): Sample {
    let tokenIds = policy.respond(prompt, rng).tokenIds;
    let finishReason: Sample['finishReason'] = 'stop';
    let stopReason: number | null = null;
    const stops = new Set(body.stop_token_ids ?? []);
    const stopAt = tokenIds.findIndex((id) => id !== eos && stops.has(id));
    if (stopAt !== -1) {
      tokenIds = tokenIds.slice(0, stopAt + 1);
      stopReason = tokenIds[stopAt]!;
    }
    if (tokenIds.length > maxTokens) {
      tokenIds = tokenIds.slice(0, maxTokens);
      finishReason = 'length';
      stopReason = null;
    }
    // −U(0,2)²: mostly confident tokens with a tail of uncertain ones.
    const logprobs = tokenIds.map(() => -((2 * rng()) ** 2));
    const k = body.logprobs ?? 0;
    const alternatives =
      k === 0
        ? null
        : logprobs.map((lp) => {
            // Alternatives share the probability the sampled token left, so the top set sums to ≤ 1.
            const rest = 1 - Math.exp(lp);
            return Array.from({ length: k }, (_, j): [number, number] => [
              prompt[Math.floor(rng() * prompt.length)]!,
              Math.max(Math.log(rest * (0.5 + 0.5 * rng()) * 0.5 ** (j + 1)), -9999),
            ]);
          });
    return { tokenIds, logprobs, alternatives, finishReason, stopReason };
  }

  return app;
}

/**
 * Text and logprobs of a sample's first tokens, as vLLM's detokenizer would show them: special
 * tokens dropped when `skip_special_tokens` (the default), the token that stopped generation
 * left out of the text (but not of token_ids or logprobs), and an incomplete UTF-8 character
 * held back until the token that completes it.
 */
class OutputRenderer {
  /** Text of the first `textUpTo` tokens, decoded in pieces that end on character boundaries. */
  private textSoFar = '';
  private textUpTo = 0;
  private pending: number[] = [];

  constructor(
    private readonly sample: Sample,
    private readonly body: CompletionRequest,
    private readonly tokenText: (id: number) => string,
    private readonly decode: (ids: number[]) => string,
    private readonly specialIds: ReadonlySet<number>,
  ) {}

  /** Visible text of the first `n` tokens; `n` never decreases between calls. */
  text(n: number): string {
    const ids = this.sample.tokenIds;
    const final = n === ids.length;
    // A `stop` finish always ends with the token that caused it (EOS or a stop_token_ids entry).
    const visibleEnd = final && this.sample.finishReason === 'stop' ? n - 1 : n;
    const skip = this.body.skip_special_tokens !== false;
    for (; this.textUpTo < visibleEnd; this.textUpTo++) {
      const id = ids[this.textUpTo]!;
      if (skip && this.specialIds.has(id)) continue;
      this.pending.push(id);
      const piece = this.decode(this.pending);
      if (!piece.endsWith('\uFFFD')) {
        this.textSoFar += piece;
        this.pending = [];
      }
    }
    if (final && this.pending.length > 0) {
      this.textSoFar += this.decode(this.pending);
      this.pending = [];
    }
    return this.textSoFar;
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
      const id = this.sample.tokenIds[i]!;
      const token = this.label(id);
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

  private label(id: number): string {
    return this.body.return_tokens_as_token_ids ? `token_id:${id}` : this.tokenText(id);
  }
}
