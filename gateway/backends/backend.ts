/** A generation request with token ids in and token ids out. */
export interface GenerateRequest {
  /** The prompt, often a view of the chain's buffer: read during the call, never kept or changed. */
  promptIds: ArrayLike<number>;
  maxTokens: number;
  temperature: number;
  topP: number;
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

/** The engine answered with an error or could not be reached; the client may retry. */
export class BackendError extends Error {
  override name = 'BackendError';
  constructor(
    message: string,
    readonly status: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * The status a client gets for an engine's error answer: a 400 (a prompt too long for the engine)
 * is the request's fault, so the client must not retry and the router must not fail over; anything
 * else is the engine's, a 502 the client may retry.
 */
export function engineStatus(engineHttpStatus: number): number {
  return engineHttpStatus === 400 ? 400 : 502;
}
