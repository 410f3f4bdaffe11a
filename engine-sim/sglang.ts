import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import type { RequestOutcome } from './engine.js';
import type { RouteContext } from './server.js';
import { startEventStream } from './sse.js';
import { NonEmptyTokenIdList, TokenIdList } from './token-ids.js';

/** SGLang's `SamplingParams.max_new_tokens` default. */
const DEFAULT_MAX_NEW_TOKENS = 128;

/** The `sampling_params` fields the simulator reads; other fields are accepted and ignored. */
const SamplingParamsSchema = z.object({
  // SGLang accepts 0 (prompt logprobs only); the simulator always generates.
  max_new_tokens: z.number().int().min(1, 'engine-sim needs max_new_tokens ≥ 1').nullish(),
  /** Accepted for compatibility; the scripted policy does not depend on it. */
  temperature: z.number().min(0).nullish(),
  /** Accepted for compatibility; the scripted policy does not depend on it. */
  top_p: z.number().gt(0).max(1).nullish(),
  stop_token_ids: TokenIdList.nullish(),
  skip_special_tokens: z.boolean().nullish(),
  sampling_seed: z.number().int().nullish(),
});

/** The `/generate` fields (SGLang's `GenerateReqInput`) the simulator reads. */
export const GenerateRequestSchema = z.object({
  input_ids: NonEmptyTokenIdList('input_ids').optional(),
  text: z.unknown().optional(),
  sampling_params: SamplingParamsSchema.nullish(),
  rid: z.string().min(1).nullish(),
  return_logprob: z.boolean().nullish(),
  /** -1 (SGLang's default): log-probs of output tokens only; the simulator has no prompt log-probs. */
  logprob_start_len: z.literal(-1, { error: 'engine-sim returns output log-probs only (logprob_start_len -1)' }).nullish(),
  top_logprobs_num: z.number().int().min(0).nullish(),
  return_text_in_logprobs: z.boolean().nullish(),
  stream: z.boolean().nullish(),
});

/** `POST /abort_request` (SGLang's `AbortReq`). */
export const AbortRequestSchema = z.object({
  rid: z.string().default(''),
  abort_all: z.boolean().default(false),
});

/** `meta_info.finish_reason` as SGLang's finish reasons serialise themselves. */
type FinishReason =
  | { type: 'stop'; matched: number }
  | { type: 'length'; length: number }
  | { type: 'abort'; message: string; status_code: null; err_type: null };

/** SGLang's logprob entry: [logprob, token id, token text or null]. */
type LogprobEntry = [number, number, string | null];

export interface SglangRoutes {
  /** `POST /abort_request` calls received. */
  abortRequestsReceived(): number;
}

/**
 * SGLang's native API on the same engine and policy as the vLLM routes: `POST /generate` with token
 * ids in and out (JSON, or SSE chunks as the engine steps, ending with `data: [DONE]`),
 * `POST /abort_request` and `GET /get_server_info` (the KV capacity as `max_total_num_tokens`,
 * at the top as older SGLang versions report it). Errors use SGLang's `{"error": {"message"}}` envelope.
 */
export function registerSglangRoutes(
  app: FastifyInstance,
  context: RouteContext,
  options: { incrementalStreaming: boolean },
): SglangRoutes {
  const { engine } = context;
  /** Requests under way by rid, with the function that aborts one on `/abort_request`. */
  const live = new Map<string, () => void>();
  let abortRequests = 0;

  void app.register(async (sglang) => {
    sglang.setErrorHandler((err: Error & { statusCode?: number }, _req, reply) => {
      void reply.status(err.statusCode ?? 500).send({ error: { message: err.message } });
    });

    sglang.get('/get_server_info', async () => ({ max_total_num_tokens: engine.maxRequestTokens, context_length: engine.maxRequestTokens }));

    sglang.post('/abort_request', async (req, reply) => {
      const parsed = AbortRequestSchema.safeParse(req.body ?? {});
      if (!parsed.success) return badRequest(reply, parsed.error);
      abortRequests++;
      const { rid, abort_all } = parsed.data;
      // Unknown or finished rids are ignored, as SGLang does.
      for (const [id, abort] of [...live]) if (abort_all || id === rid) abort();
      return reply.status(200).send();
    });

    sglang.post('/generate', async (req, reply) => {
      const parsed = GenerateRequestSchema.safeParse(req.body);
      if (!parsed.success) return badRequest(reply, parsed.error);
      const body = parsed.data;
      const prompt = body.input_ids;
      if (!prompt || body.text !== undefined) {
        return reply.status(400).send({
          error: {
            message:
              'engine-sim serves one token-id prompt per request: give input_ids (a list of ints), not text or a batch',
          },
        });
      }
      const params = body.sampling_params ?? {};
      const maxTokens = params.max_new_tokens ?? DEFAULT_MAX_NEW_TOKENS;
      const rid = body.rid ?? randomUUID().replace(/-/g, '');
      // SGLang raises these inside its response generator: a stream has already begun (200) and
      // carries the error as an event; a plain request gets a 400.
      const invalid =
        prompt.length + maxTokens > engine.maxRequestTokens
          ? `Requested token count exceeds the model's maximum context length of ${engine.maxRequestTokens} tokens. You requested a total of ${prompt.length + maxTokens} tokens: ${prompt.length} tokens from the input messages and ${maxTokens} tokens for the completion.`
          : live.has(rid)
            ? `Duplicate request ID: ${rid}`
            : null;
      if (invalid !== null) {
        if (!body.stream) return reply.status(400).send({ error: { message: invalid } });
        return reply
          .type('text/event-stream')
          .send(`data: ${JSON.stringify({ error: { message: invalid } })}\n\ndata: [DONE]\n\n`);
      }

      const sample = context.plan(
        prompt,
        {
          maxTokens,
          stopTokenIds: params.stop_token_ids ?? [],
          topLogprobs: body.return_logprob ? (body.top_logprobs_num ?? 0) : 0,
        },
        params.sampling_seed,
      );
      const renderer = context.renderer(sample, params.skip_special_tokens !== false);
      const entry = (id: number, lp: number): LogprobEntry => [
        lp,
        id,
        body.return_text_in_logprobs ? context.tokenText(id) : null,
      ];
      const started = performance.now();
      let cachedTokens = 0;
      let abortedByRequest = false;

      /** `meta_info` for output tokens [from, to) with `to` produced so far. */
      const metaInfo = (from: number, to: number, finish: FinishReason | null) => ({
        id: rid,
        finish_reason: finish,
        prompt_tokens: prompt.length,
        weight_version: context.weightVersion.value,
        completion_tokens: to,
        cached_tokens: cachedTokens,
        ...(body.return_logprob
          ? {
              output_token_logprobs: sample.tokenIds
                .slice(from, to)
                .map((id, i) => entry(id, sample.logprobs[from + i]!)),
              ...(sample.alternatives
                ? {
                    output_top_logprobs: sample.alternatives
                      .slice(from, to)
                      .map((alts) => alts.map(([id, lp]) => entry(id, lp))),
                  }
                : {}),
            }
          : {}),
        ...(finish ? { e2e_latency: (performance.now() - started) / 1000 } : {}),
      });
      const finishOf = (n: number, outcome: RequestOutcome): FinishReason =>
        outcome !== 'finished'
          ? {
              type: 'abort',
              message: outcome === 'preempted' ? 'Aborted by the engine (pause or weight update).' : 'Aborted by AbortReq.',
              status_code: null,
              err_type: null,
            }
          : sample.finishReason === 'length'
            ? { type: 'length', length: maxTokens }
            : { type: 'stop', matched: sample.tokenIds[n - 1]! };

      let produced = 0;
      let sent = 0;
      let sentText = '';
      let send: ((n: number, finish: FinishReason | null) => void) | null = null;
      const run = context.run(req, reply, prompt, sample, maxTokens, {
        onAdmitted: (cached) => (cachedTokens = cached),
        onTokens: (total) => {
          produced = total;
          send?.(total, total === sample.tokenIds.length ? finishOf(total, 'finished') : null);
        },
      });
      live.set(rid, () => {
        abortedByRequest = true;
        run.abort();
      });

      if (body.stream) {
        const res = startEventStream(reply);
        // One chunk per engine step that produced tokens. By default every chunk repeats all
        // output so far (SGLang's default); incremental streaming sends only the new part.
        send = (n, finish) => {
          const text = renderer.text(n);
          const from = options.incrementalStreaming ? sent : 0;
          res.write(
            `data: ${JSON.stringify({
              text: options.incrementalStreaming ? text.slice(sentText.length) : text,
              output_ids: sample.tokenIds.slice(from, n),
              meta_info: metaInfo(from, n, finish),
            })}\n\n`,
          );
          sent = n;
          sentText = text;
        };
        const outcome = await run.outcome;
        live.delete(rid);
        // Only a client that left gets no ending: an abort by rid or by the engine is reported.
        const clientLeft = outcome === 'aborted' && !abortedByRequest;
        if (outcome !== 'finished' && !clientLeft) send(produced, finishOf(produced, outcome));
        if (!clientLeft) res.write('data: [DONE]\n\n');
        res.end();
        return;
      }

      const outcome = await run.outcome;
      live.delete(rid);
      // Aborted because the client left: there is nobody to answer.
      if (outcome === 'aborted' && !abortedByRequest) return reply.status(503).send();
      return {
        text: renderer.text(produced),
        output_ids: sample.tokenIds.slice(0, produced),
        meta_info: metaInfo(0, produced, finishOf(produced, outcome)),
      };
    });
  });

  return { abortRequestsReceived: () => abortRequests };
}

function badRequest(reply: FastifyReply, error: z.ZodError) {
  const issue = error.issues[0]!;
  const where = issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
  return reply.status(400).send({ error: { message: `${where}${issue.message}` } });
}
