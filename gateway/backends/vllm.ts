import { BackendError, engineStatus, parseWeightVersion, type Backend, type GenerateRequest, type GenerateResult } from './backend.js';
import { engineEndpoint, postToEngine, type EngineAnswer, type EngineEndpoint } from './engine-http.js';
import { jsonBodyWithIds } from './json-body.js';
import { readEngineEvents } from './engine-events.js';
import { MalformedChunkError, parseCompletionChunk, parseTokenId } from './vllm-chunk.js';

export interface VllmBackendOptions {
  /** Base URL of the engine, e.g. `http://127.0.0.1:8000`. */
  url: string;
  /** Served model name. */
  model: string;
}

/**
 * vLLM's OpenAI-compatible `/v1/completions` with a token-id prompt, output ids only (as
 * `logprobs.tokens` with `return_tokens_as_token_ids`), always streamed so tokens reach the client as
 * they are produced and a disconnect aborts the request.
 */
export class VllmBackend implements Backend {
  readonly kind = 'vllm' as const;
  private readonly completions: EngineEndpoint;
  constructor(private readonly options: VllmBackendOptions) {
    this.completions = engineEndpoint(`${options.url}/v1/completions`);
  }

  async generate(request: GenerateRequest): Promise<GenerateResult> {
    let response: EngineAnswer;
    try {
      response = await postToEngine(
        this.completions,
        jsonBodyWithIds({ model: this.options.model }, 'prompt', request.promptIds, {
          max_tokens: request.maxTokens,
          temperature: request.temperature,
          top_p: request.topP,
          // Every sampling parameter explicit: vLLM otherwise takes the model folder's generation_config.json (Qwen3's top_k is 20).
          top_k: request.topK,
          min_p: request.minP,
          presence_penalty: request.presencePenalty,
          frequency_penalty: request.frequencyPenalty,
          repetition_penalty: request.repetitionPenalty,
          logprobs: 0,
          return_tokens_as_token_ids: true,
          skip_special_tokens: false,
          stream: true,
          stream_options: { include_usage: true },
        }),
        request.signal,
      );
    } catch (error) {
      if (request.signal?.aborted) return aborted(request);
      throw new BackendError(`engine ${this.options.url} unreachable`, 503, { cause: error });
    }
    if (response.status < 200 || response.status >= 300) {
      throw new BackendError(`engine ${this.options.url} answered ${response.status}: ${await response.text()}`, engineStatus(response.status));
    }
    const ids: number[] = [];
    const logprobs: number[] = [];
    // vLLM keeps no weight version; engine-sim names it in a header.
    const weightVersion = parseWeightVersion(response.header('x-weight-version'));
    let finishReason: GenerateResult['finishReason'] | undefined;
    let promptTokens = request.promptIds.length;
    let cachedTokens = 0;
    try {
      for await (const events of readEngineEvents(response.body, this.options.url, 500)) {
        for (const value of events) {
          const chunk = parseCompletionChunk(value);
          const choice = chunk.choices[0];
          if (choice) {
            const tokens = choice.logprobs?.tokens ?? [];
            const newIds: number[] = [];
            for (const token of tokens) newIds.push(this.tokenId(token));
            const raw = choice.logprobs?.token_logprobs ?? [];
            // The gateway never invents log-probs: a missing one is the engine's error.
            if (raw.length !== newIds.length || raw.includes(null)) {
              throw new BackendError('engine returned token ids without matching log-probs', 502);
            }
            const newLogprobs = raw as number[];
            for (let i = 0; i < newIds.length; i++) {
              ids.push(newIds[i]!);
              logprobs.push(newLogprobs[i]!);
            }
            if (newIds.length > 0) request.onTokens?.(newIds, newLogprobs);
            if (choice.finish_reason) finishReason = finishReasonOf(choice.finish_reason);
          }
          if (chunk.usage) {
            promptTokens = chunk.usage.prompt_tokens;
            cachedTokens = chunk.usage.prompt_tokens_details?.cached_tokens ?? 0;
          }
        }
      }
    } catch (error) {
      // An abort after the finish reason arrived cut nothing: the answer is complete.
      if (request.signal?.aborted) return { ids, logprobs, finishReason: finishReason ?? 'abort', promptTokens, cachedTokens, weightVersion };
      if (error instanceof BackendError) throw error;
      if (error instanceof MalformedChunkError) throw new BackendError(`engine ${this.options.url} sent a malformed chunk: ${error.message}`, 502, { cause: error });
      throw new BackendError(`engine ${this.options.url} stream failed`, 502, { cause: error });
    }
    if (!finishReason) {
      if (request.signal?.aborted) return { ids, logprobs, finishReason: 'abort', promptTokens, cachedTokens, weightVersion };
      // Not the client's abort: the engine broke off, and a cut answer must not pass as whole.
      throw new BackendError(`engine ${this.options.url} ended the stream without a finish reason`, 502);
    }
    return { ids, logprobs, finishReason, promptTokens, cachedTokens, weightVersion };
  }

  /** A sampled token's id from its `token_id:<id>` label. */
  private tokenId(token: string): number {
    const id = parseTokenId(token);
    if (id === undefined) throw new BackendError(`engine ${this.options.url} named a token ${JSON.stringify(token)}, not token_id:<id> (return_tokens_as_token_ids)`, 502);
    return id;
  }
}

function aborted(request: GenerateRequest): GenerateResult {
  return { ids: [], logprobs: [], finishReason: 'abort', promptTokens: request.promptIds.length, cachedTokens: 0 };
}

/** vLLM's finish reasons; an abort the gateway did not ask for is the engine giving up. */
function finishReasonOf(reason: string): GenerateResult['finishReason'] {
  if (reason === 'length') return 'length';
  if (reason === 'abort') throw new BackendError('the engine aborted the request', 503);
  return 'stop';
}
