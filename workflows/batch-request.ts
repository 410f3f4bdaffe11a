import { ApplicationFailure } from '@temporalio/common';
import type { BatchInput, BatchRequest, EpisodeLimits, EpisodeTimeouts, Sampling } from '../activities/types.js';
import { BOUND_DEFAULTS, boundViolation } from './batch-bounds.js';
import { EPISODE_TIMEOUT_DEFAULTS } from './episode-timeouts.js';
import { ID_RULE, isSafeId } from './ids.js';

/**
 * Defaults of a BatchRequest, applied inside the batch workflow so a trainer starting it by name
 * needs only `taskIds` and `n`. They equal the configuration defaults of stack/config.ts.
 */
export const BATCH_DEFAULTS = {
  taskSource: 'builtin',
  agentName: 'builtin',
  concurrency: 8,
  filterUniformGroups: true,
  continueAfterEvents: 8_000,
  maxStaleness: null,
  staleAction: 'drop',
  limits: { maxTurns: 30, maxContextTokens: 32_768, maxWallTimeMs: 30 * 60 * 1000, maxInfraAttempts: 3, commandTimeoutMs: 60_000 },
  sampling: { temperature: 1, topP: 1, topK: -1, minP: 0, presencePenalty: 0, frequencyPenalty: 0, repetitionPenalty: 1, maxTokens: 4096, logprobsMode: 'raw' },
  timeouts: EPISODE_TIMEOUT_DEFAULTS,
} as const satisfies Omit<BatchInput, 'batchId' | 'taskIds' | 'n'>;

/** Re-runs of one sample found stale before it is dropped anyway, so a fast-moving policy cannot stall a batch. */
export const MAX_STALE_RERUNS = 2;

/** Groups handed over by one `finishedGroups` answer at most; the cursor fetches the rest. */
export const MAX_GROUPS_PER_ANSWER = 256;

class InvalidBatchRequest extends Error {}

const positiveInt = (value: unknown): value is number => Number.isInteger(value) && (value as number) > 0;

function check(ok: boolean, message: string): void {
  if (!ok) throw new InvalidBatchRequest(message);
}

function merged<T extends object>(defaults: T, given: Partial<T> | undefined, name: string): T {
  if (given === undefined) return { ...defaults };
  check(typeof given === 'object' && given !== null && !Array.isArray(given), `${name} must be an object`);
  const out = { ...defaults };
  for (const key of Object.keys(given) as (keyof T)[]) {
    check(key in defaults, `${name}.${String(key)} is not a known key`);
    if (typeof defaults[key] === 'string') check(typeof given[key] === 'string', `${name}.${String(key)} must be a string`);
    else check(typeof given[key] === 'number' && Number.isFinite(given[key]), `${name}.${String(key)} must be a number`);
    out[key] = given[key] as T[keyof T];
  }
  return out;
}

/**
 * Validates a request that may come from any language and applies the defaults. A bad request
 * (a malformed one, an unsafe batch id, one past the default bounds of workflows/batch-bounds.ts)
 * fails the workflow at once (a non-retryable failure) instead of retrying a doomed task or
 * exhausting the worker's memory.
 */
export function resolveBatchRequest(request: BatchRequest, workflowId: string): BatchInput {
  try {
    check(typeof request === 'object' && request !== null, 'the batch request must be a JSON object');
    check(Array.isArray(request.taskIds) && request.taskIds.length > 0 && request.taskIds.every((t) => typeof t === 'string' && t.length > 0), 'taskIds must be a non-empty list of task ids');
    check(positiveInt(request.n), 'n must be a positive integer');
    check(request.concurrency === undefined || positiveInt(request.concurrency), 'concurrency must be a positive integer');
    check(request.continueAfterEvents === undefined || positiveInt(request.continueAfterEvents), 'continueAfterEvents must be a positive integer');
    check(request.maxStaleness == null || (Number.isInteger(request.maxStaleness) && request.maxStaleness >= 0), 'maxStaleness must be a non-negative integer or null');
    check(request.staleAction === undefined || request.staleAction === 'drop' || request.staleAction === 'rerun', 'staleAction must be drop or rerun');
    for (const key of ['batchId', 'taskSource', 'agentName'] as const) {
      check(request[key] === undefined || (typeof request[key] === 'string' && request[key].length > 0), `${key} must be a non-empty string`);
    }
    check(request.filterUniformGroups === undefined || typeof request.filterUniformGroups === 'boolean', 'filterUniformGroups must be a boolean');
    const limits: EpisodeLimits = merged<EpisodeLimits>(BATCH_DEFAULTS.limits, request.limits, 'limits');
    const sampling: Sampling = merged<Sampling>(BATCH_DEFAULTS.sampling, request.sampling, 'sampling');
    check(sampling.logprobsMode === 'raw' || sampling.logprobsMode === 'processed', 'sampling.logprobsMode must be raw or processed');
    const timeouts: EpisodeTimeouts = merged<EpisodeTimeouts>(BATCH_DEFAULTS.timeouts, request.timeouts, 'timeouts');
    const batchId = request.batchId ?? workflowId;
    check(isSafeId(batchId), `batch id ${JSON.stringify(batchId)} is not valid: ${ID_RULE}`);
    const input: BatchInput = {
      batchId,
      taskSource: request.taskSource ?? BATCH_DEFAULTS.taskSource,
      taskIds: [...request.taskIds],
      n: request.n,
      agentName: request.agentName ?? BATCH_DEFAULTS.agentName,
      concurrency: request.concurrency ?? BATCH_DEFAULTS.concurrency,
      filterUniformGroups: request.filterUniformGroups ?? BATCH_DEFAULTS.filterUniformGroups,
      limits,
      sampling,
      timeouts,
      continueAfterEvents: request.continueAfterEvents ?? BATCH_DEFAULTS.continueAfterEvents,
      maxStaleness: request.maxStaleness ?? BATCH_DEFAULTS.maxStaleness,
      staleAction: request.staleAction ?? BATCH_DEFAULTS.staleAction,
    };
    const violation = boundViolation(input, BOUND_DEFAULTS);
    if (violation) throw new InvalidBatchRequest(violation);
    return input;
  } catch (error) {
    if (error instanceof InvalidBatchRequest) throw ApplicationFailure.nonRetryable(error.message, 'InvalidBatchRequest');
    throw error;
  }
}

/** Whether an episode whose oldest token was sampled by `minVersion` is too old for the batch. */
export function isStale(minVersion: number | null, currentVersion: number, maxStaleness: number | null): boolean {
  return maxStaleness !== null && minVersion !== null && currentVersion - minVersion > maxStaleness;
}
