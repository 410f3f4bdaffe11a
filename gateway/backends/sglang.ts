import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { BackendError, engineStatus, parseWeightVersion, type Backend, type GenerateRequest, type GenerateResult } from './backend.js';
import { engineEndpoint, postToEngine, type EngineAnswer, type EngineEndpoint } from './engine-http.js';
import { jsonBodyWithIds } from './json-body.js';
import { readEngineEvents } from './engine-events.js';

/** SGLang's logprob entry: [logprob, token id, token text or null]. */
const LogprobEntrySchema = z.tuple([z.number().nullable(), z.number().int(), z.string().nullable()]);
const MetaInfoSchema = z.object({
  /** `{type: stop, matched}`, `{type: length, length}` or `{type: abort, message, …}`; null until the end. */
  finish_reason: z.object({ type: z.string(), message: z.string().nullish() }).nullish(),
  prompt_tokens: z.number().int(),
  /** Output tokens so far, in every chunk whatever the streaming mode. */
  completion_tokens: z.number().int(),
  cached_tokens: z.number().int().nullish(),
  output_token_logprobs: z.array(LogprobEntrySchema).nullish(),
  /** The weight version that served the request (SGLang's `--weight-version`, set by weight updates). */
  weight_version: z.string().nullish(),
});
const ChunkSchema = z.object({ output_ids: z.array(z.number().int()), meta_info: MetaInfoSchema });

export interface SglangBackendOptions {
  /** Base URL of the engine, e.g. `http://127.0.0.1:30000`. */
  url: string;
}

/**
 * SGLang's native `/generate` with `input_ids`, always streamed so tokens reach the client as they
 * are produced. An aborted request closes its stream and is also aborted by rid through
 * `/abort_request`, which ends it even where a disconnect goes unnoticed (behind a proxy).
 *
 * Stream chunks repeat all output so far by default, or carry only the new part when the server
 * runs with `--incremental-streaming-output`; `meta_info.completion_tokens` tells which.
 */
export class SglangBackend implements Backend {
  readonly kind = 'sglang' as const;
  private readonly generateEndpoint: EngineEndpoint;
  constructor(private readonly options: SglangBackendOptions) {
    this.generateEndpoint = engineEndpoint(`${options.url}/generate`);
  }

  async generate(request: GenerateRequest): Promise<GenerateResult> {
    const { url } = this.options;
    const rid = randomUUID().replace(/-/g, '');
    const ids: number[] = [];
    const logprobs: number[] = [];
    let promptTokens = request.promptIds.length;
    let cachedTokens = 0;
    let weightVersion: number | undefined;
    let finish: z.output<typeof MetaInfoSchema>['finish_reason'] = null;
    const result = (finishReason: GenerateResult['finishReason']): GenerateResult => ({
      ids,
      logprobs,
      finishReason,
      promptTokens,
      cachedTokens,
      weightVersion,
    });
    /** An abort after the finish reason arrived cut nothing: the answer is complete. */
    const abortedResult = () => result(finish?.type === 'length' ? 'length' : finish && finish.type !== 'abort' ? 'stop' : 'abort');
    if (request.signal?.aborted) return result('abort');

    const abortOnEngine = () => {
      // Best effort: the engine may be gone, and the closed stream aborts the request there too.
      void fetch(`${url}/abort_request`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ rid }),
      })
        .then((response) => response.arrayBuffer())
        .catch(() => {});
    };
    request.signal?.addEventListener('abort', abortOnEngine, { once: true });
    try {
      let response: EngineAnswer;
      try {
        response = await postToEngine(
          this.generateEndpoint,
          jsonBodyWithIds({ rid }, 'input_ids', request.promptIds, {
            sampling_params: {
              max_new_tokens: request.maxTokens,
              temperature: request.temperature,
              top_p: request.topP,
              top_k: request.topK,
              min_p: request.minP,
              presence_penalty: request.presencePenalty,
              frequency_penalty: request.frequencyPenalty,
              repetition_penalty: request.repetitionPenalty,
              skip_special_tokens: false,
            },
            return_logprob: true,
            // Log-probs of output tokens only (SGLang's default, said explicitly): none of the prompt's.
            logprob_start_len: -1,
            stream: true,
          }),
          request.signal,
        );
      } catch (error) {
        if (request.signal?.aborted) return result('abort');
        throw new BackendError(`engine ${url} unreachable`, 503, { cause: error });
      }
      if (response.status < 200 || response.status >= 300) {
        throw new BackendError(`engine ${url} answered ${response.status}: ${await response.text()}`, engineStatus(response.status));
      }
      try {
        // SGLang streams a ValueError (a prompt too long: the request's fault) as an event without a code.
        for await (const events of readEngineEvents(response.body, url, 400)) {
          for (const value of events) {
            const chunk = ChunkSchema.parse(value);
            const meta = chunk.meta_info;
            promptTokens = meta.prompt_tokens;
            cachedTokens = meta.cached_tokens ?? 0;
            weightVersion = parseWeightVersion(meta.weight_version) ?? weightVersion;
            const [newIds, newLogprobs] = this.newTokens(chunk.output_ids, meta, ids.length);
            ids.push(...newIds);
            logprobs.push(...newLogprobs);
            if (newIds.length > 0) request.onTokens?.(newIds, newLogprobs);
            finish = meta.finish_reason ?? null;
          }
        }
      } catch (error) {
        if (request.signal?.aborted) return abortedResult();
        if (error instanceof BackendError) throw error;
        throw new BackendError(`engine ${url} stream failed`, 502, { cause: error });
      }
      if (request.signal?.aborted) return abortedResult();
      if (!finish) throw new BackendError(`engine ${url} ended the stream without a finish reason`, 502);
      if (finish.type === 'length') return result('length');
      if (finish.type !== 'abort') return result('stop');
      // Aborted by the engine itself (overload, a weight update): retryable, not the client's doing.
      throw new BackendError(`engine ${url} aborted the request: ${finish.message ?? 'no reason given'}`, 503);
    } finally {
      request.signal?.removeEventListener('abort', abortOnEngine);
    }
  }

  /**
   * The ids and log-probs a chunk adds to the `have` tokens already received. The engine's log-prob
   * entries must name exactly the returned ids: none is ever made up here.
   */
  private newTokens(
    outputIds: number[],
    meta: z.output<typeof MetaInfoSchema>,
    have: number,
  ): [number[], number[]] {
    const total = meta.completion_tokens;
    // Cumulative chunks hold all `total` ids; incremental ones the `total - have` new ones. Both
    // readings agree on the first chunk (have = 0), so this is never ambiguous.
    const cumulative = outputIds.length === total;
    if (!cumulative && have + outputIds.length !== total) {
      throw new BackendError(
        `engine ${this.options.url} sent ${outputIds.length} output ids for ${total} tokens after ${have}`,
        502,
      );
    }
    const newIds = cumulative ? outputIds.slice(have) : outputIds;
    if (newIds.length === 0) return [[], []];
    const entries = meta.output_token_logprobs;
    const newEntries = entries && cumulative && entries.length === total ? entries.slice(have) : entries;
    if (!newEntries || newEntries.length !== newIds.length) {
      throw new BackendError(`engine ${this.options.url} returned token ids without matching log-probs`, 502);
    }
    const newLogprobs = newEntries.map(([logprob, id], i) => {
      if (logprob === null || id !== newIds[i]) {
        throw new BackendError(`engine ${this.options.url} returned log-probs that do not match its token ids`, 502);
      }
      return logprob;
    });
    return [newIds, newLogprobs];
  }
}
