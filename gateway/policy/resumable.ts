import type { RouteCall } from '../../scheduler/router.js';
import type { GenerateRequest, GenerateResult } from '../backends/backend.js';
import type { GenerationLease } from './policy-control.js';
import { joinIds } from '../session/token-buffer.js';

/** What a generation needs from the policy state: a lease, waited for while paused. */
export interface PolicyGate {
  acquire(signal: AbortSignal): Promise<GenerationLease | undefined>;
}

/** A generation that may span a pause: its tokens, each with the version that sampled it. */
export interface ResumableResult extends GenerateResult {
  /** Policy version of each sampled id. */
  versions: number[];
  /** A pause aborted the generation and it continued from its tokens afterwards. */
  resumed: boolean;
}

/**
 * Runs one model call as one generation, across pauses. Each part waits for a lease (so a call
 * made while paused waits), and a part that a pause in abort mode stopped keeps its tokens: after
 * resume the call continues from prompt + those tokens on the new weights (partial rollout), with
 * what is left of `maxTokens`. The client's `onTokens` sees one uninterrupted answer. Every token
 * is tagged with the version the engine reports, or else the version of the lease it ran under.
 */
export async function generateResumable(
  gate: PolicyGate,
  call: RouteCall,
  request: GenerateRequest & { signal: AbortSignal },
  generate: (call: RouteCall, request: GenerateRequest) => Promise<GenerateResult>,
): Promise<ResumableResult> {
  const ids: number[] = [];
  const logprobs: number[] = [];
  const versions: number[] = [];
  let resumed = false;
  // Usage and cache hits describe the call's first prompt, as the client sent it.
  let first: GenerateResult | undefined;
  const done = (last: GenerateResult | undefined, finishReason: GenerateResult['finishReason']): ResumableResult => ({
    ids,
    logprobs,
    versions,
    resumed,
    finishReason,
    promptTokens: first?.promptTokens ?? request.promptIds.length,
    cachedTokens: first?.cachedTokens ?? 0,
    weightVersion: last?.weightVersion,
  });
  for (;;) {
    const lease = await gate.acquire(request.signal);
    if (!lease) return done(undefined, 'abort');
    // Only a resumed part needs a new prompt: the first sends the client's as it is.
    const promptIds = ids.length === 0 ? request.promptIds : joinIds(request.promptIds, ids);
    const maxTokens = request.maxTokens - ids.length;
    let part: GenerateResult;
    try {
      part = await generate(
        { ...call, promptIds, expectedOutputTokens: maxTokens },
        { ...request, promptIds, maxTokens, signal: AbortSignal.any([request.signal, lease.signal]) },
      );
    } catch (error) {
      lease.release('ended');
      throw error;
    }
    const preempted = part.finishReason === 'abort' && lease.signal.aborted && !request.signal.aborted;
    lease.release(preempted ? 'preempted' : 'ended');
    const version = part.weightVersion ?? lease.version;
    ids.push(...part.ids);
    logprobs.push(...part.logprobs);
    for (let i = 0; i < part.ids.length; i++) versions.push(version);
    first ??= part;
    if (!preempted) return done(part, part.finishReason);
    resumed = true;
    if (ids.length >= request.maxTokens) return done(part, 'length');
  }
}
