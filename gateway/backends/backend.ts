/** A generation request with token ids in and token ids out. */
export interface GenerateRequest {
  /** The prompt, often a view of the chain's buffer: read during the call, never kept or changed. */
  promptIds: ArrayLike<number>;
  maxTokens: number;
  temperature: number;
  topP: number;
  /** -1: off. Sent like every parameter here, so the engine's generation_config cannot add one. */
  topK: number;
  minP: number;
  presencePenalty: number;
  frequencyPenalty: number;
  repetitionPenalty: number;
  /** Aborts the engine request (client disconnected, budget hit). */
  signal?: AbortSignal;
  /** Called as tokens arrive, for streaming to the client. */
  onTokens?: (ids: number[], logprobs: number[]) => void;
}

export interface GenerateResult {
  /** Sampled ids exactly as the engine returned them, end-of-turn token included when sampled. */
  ids: number[];
  /** The engine's log-prob of each sampled id. */
  logprobs: number[];
  finishReason: 'stop' | 'length' | 'abort';
  promptTokens: number;
  cachedTokens: number;
  /**
   * The weight version the engine reports it sampled with (SGLang's `meta_info.weight_version`,
   * when it is a whole number); undefined when the engine reports none.
   */
  weightVersion?: number;
}

/** An engine's weight version label as a policy version: only whole numbers count. */
export function parseWeightVersion(label: string | null | undefined): number | undefined {
  return label && /^\d+$/.test(label) ? Number(label) : undefined;
}

/** The inference engine APIs the gateway speaks. */
export type BackendKind = 'vllm' | 'sglang';

/** One inference engine API. */
export interface Backend {
  readonly kind: BackendKind;
  generate(request: GenerateRequest): Promise<GenerateResult>;
}

/**
 * The engine answered with an error or could not be reached. `status` is the client's: a 4xx the
 * request's fault (see `isRequestFault`), a 5xx the engine's, which the client may retry.
 */
export class BackendError extends Error {
  override name = 'BackendError';
  constructor(
    message: string,
    readonly status: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** Whether the engine failed (down, broken, overloaded) rather than the request: only then is it taken out of rotation and the call failed over. */
  get engineFault(): boolean {
    return !isRequestFault(this.status);
  }
}

/**
 * Whether an engine's error status blames the request (a prompt too long, a wrong model name): a
 * 4xx other than 408 (timeout) and 429 (overload), which are the engine's.
 */
export function isRequestFault(engineHttpStatus: number): boolean {
  return engineHttpStatus >= 400 && engineHttpStatus < 500 && engineHttpStatus !== 408 && engineHttpStatus !== 429;
}

/**
 * The status a client gets for an engine's error answer or streamed error event: the request's
 * fault keeps the engine's 4xx, so the client does not retry it and the router neither fails over
 * nor takes a healthy engine out; anything else is the engine's, a 502 the client may retry.
 */
export function engineStatus(engineHttpStatus: number): number {
  return isRequestFault(engineHttpStatus) ? engineHttpStatus : 502;
}
