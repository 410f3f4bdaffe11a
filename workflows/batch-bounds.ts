import type { BatchInput } from '../activities/types.js';

/**
 * Upper bounds of one batch (`bounds.*` in the configuration). They are checked where a batch
 * comes in (the HTTP API and the CLI, with the configured bounds) and again inside the batch
 * workflow (with these defaults, since a trainer may start it by name): a request past them would
 * exhaust a worker's memory or Temporal's payload limits, or keep an episode alive for days.
 * The configuration may only lower them, so nothing the API accepts is refused by the workflow.
 */
export interface BatchBounds {
  /** Samples per task (`n`, the GRPO group size). */
  maxSamplesPerTask: number;
  /** Tasks of one batch. */
  maxTasksPerBatch: number;
  /** Episodes of one batch: tasks × samples. */
  maxEpisodesPerBatch: number;
  /** Episodes of one batch running at once. */
  maxConcurrency: number;
  /** `limits.maxTurns`. */
  maxTurns: number;
  /** `limits.maxContextTokens`. */
  maxContextTokens: number;
  /** `limits.maxWallTimeMs`. */
  maxWallTimeMs: number;
  /** `limits.maxInfraAttempts`. */
  maxInfraAttempts: number;
  /** `limits.commandTimeoutMs`. */
  commandTimeoutMs: number;
  /** `sampling.maxTokens`. */
  maxTokens: number;
}

/** The bounds the batch workflow enforces, and the highest the configuration may set. */
export const BOUND_DEFAULTS: BatchBounds = {
  maxSamplesPerTask: 64,
  maxTasksPerBatch: 10_000,
  maxEpisodesPerBatch: 100_000,
  maxConcurrency: 512,
  maxTurns: 1_000,
  maxContextTokens: 1_048_576,
  maxWallTimeMs: 24 * 60 * 60 * 1000,
  maxInfraAttempts: 10,
  commandTimeoutMs: 60 * 60 * 1000,
  maxTokens: 262_144,
};

/** What is bounded: the field of a batch input as it is named in messages, its value, its bound. */
function bounded(input: BatchInput): [field: string, value: number, bound: keyof BatchBounds][] {
  return [
    ['n', input.n, 'maxSamplesPerTask'],
    ['taskIds (count)', input.taskIds.length, 'maxTasksPerBatch'],
    ['episodes (tasks × n)', input.taskIds.length * input.n, 'maxEpisodesPerBatch'],
    ['concurrency', input.concurrency, 'maxConcurrency'],
    ['limits.maxTurns', input.limits.maxTurns, 'maxTurns'],
    ['limits.maxContextTokens', input.limits.maxContextTokens, 'maxContextTokens'],
    ['limits.maxWallTimeMs', input.limits.maxWallTimeMs, 'maxWallTimeMs'],
    ['limits.maxInfraAttempts', input.limits.maxInfraAttempts, 'maxInfraAttempts'],
    ['limits.commandTimeoutMs', input.limits.commandTimeoutMs, 'commandTimeoutMs'],
    ['sampling.maxTokens', input.sampling.maxTokens, 'maxTokens'],
  ];
}

/** The first bound the input exceeds, as a message naming the field and the bound; null when none. */
export function boundViolation(input: BatchInput, bounds: BatchBounds): string | null {
  for (const [field, value, bound] of bounded(input)) {
    if (value > bounds[bound]) return `${field} is ${value}, above bounds.${bound} = ${bounds[bound]}`;
  }
  return null;
}
