import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { ConfigSchema, episodeLimits } from '../../stack/config.js';
import { BOUND_DEFAULTS } from '../../workflows/batch-bounds.js';
import { BATCH_DEFAULTS, isStale, resolveBatchRequest } from '../../workflows/batch-request.js';

describe('the batch request a trainer sends by name', () => {
  it('has the defaults of the configuration', () => {
    const config = ConfigSchema.parse({});
    expect(BATCH_DEFAULTS).toEqual({
      taskSource: config.batch.tasks,
      agentName: config.agent.name,
      concurrency: config.batch.concurrency,
      filterUniformGroups: config.batch.filterUniformGroups,
      continueAfterEvents: config.batch.continueAfterEvents,
      maxStaleness: null,
      staleAction: 'drop',
      limits: episodeLimits(config),
      sampling: config.sampling,
      timeouts: { scheduleToStartMs: config.worker.scheduleToStartMs, cleanupWindowMs: config.worker.cleanupWindowMs },
    });
  });

  it('needs only taskIds and n; the batch id is the workflow id', () => {
    expect(resolveBatchRequest({ taskIds: ['a'], n: 2 }, 'wf-1')).toEqual({ ...BATCH_DEFAULTS, batchId: 'wf-1', taskIds: ['a'], n: 2 });
  });

  it('refuses a workflow id that is not a safe batch id when the request names none', () => {
    expect(() => resolveBatchRequest({ taskIds: ['a'], n: 1 }, 'wf/../x')).toThrow(/batch id "wf\/\.\.\/x" is not valid/);
  });

  it('takes requests at the default bounds, the highest the configuration may set', () => {
    const config = ConfigSchema.parse({});
    expect(config.bounds).toEqual(BOUND_DEFAULTS);
    expect(ConfigSchema.safeParse({ bounds: { maxSamplesPerTask: 65 } }).success).toBe(false);
    expect(ConfigSchema.safeParse({ bounds: { maxSamplesPerTask: 8 } }).success).toBe(true);
    const b = BOUND_DEFAULTS;
    const atBounds = { taskIds: ['a'], n: b.maxSamplesPerTask, concurrency: b.maxConcurrency, limits: { maxTurns: b.maxTurns, maxContextTokens: b.maxContextTokens, maxWallTimeMs: b.maxWallTimeMs, maxInfraAttempts: b.maxInfraAttempts, commandTimeoutMs: b.commandTimeoutMs }, sampling: { maxTokens: b.maxTokens } };
    expect(resolveBatchRequest(atBounds, 'wf').n).toBe(64);
  });

  it('merges partial limits and sampling key by key', () => {
    const input = resolveBatchRequest({ taskIds: ['a'], n: 1, batchId: 'b', limits: { maxTurns: 3 }, sampling: { temperature: 0 }, staleAction: 'rerun', maxStaleness: 1 }, 'wf');
    expect(input.batchId).toBe('b');
    expect(input.limits).toEqual({ ...BATCH_DEFAULTS.limits, maxTurns: 3 });
    expect(input.sampling).toEqual({ ...BATCH_DEFAULTS.sampling, temperature: 0 });
    expect(resolveBatchRequest({ taskIds: ['a'], n: 1, timeouts: { scheduleToStartMs: 10_000 } }, 'wf').timeouts).toEqual({ ...BATCH_DEFAULTS.timeouts, scheduleToStartMs: 10_000 });
    expect(input).toMatchObject({ staleAction: 'rerun', maxStaleness: 1 });
    const exact = resolveBatchRequest({ taskIds: ['a'], n: 1, sampling: { topK: 20, logprobsMode: 'processed' } }, 'wf').sampling;
    expect(exact).toEqual({ ...BATCH_DEFAULTS.sampling, topK: 20, logprobsMode: 'processed' });
  });

  it.each([
    [{ taskIds: [], n: 1 }, 'taskIds'],
    [{ taskIds: ['a'], n: 0 }, 'n must'],
    [{ taskIds: ['a'], n: 1.5 }, 'n must'],
    [{ taskIds: ['a'], n: 1, staleAction: 'keep' }, 'staleAction'],
    [{ taskIds: ['a'], n: 1, maxStaleness: -1 }, 'maxStaleness'],
    [{ taskIds: ['a'], n: 1, limits: { maxTurn: 3 } }, 'limits.maxTurn'],
    [{ taskIds: ['a'], n: 1, sampling: { temperature: '1' } }, 'sampling.temperature'],
    [{ taskIds: ['a'], n: 1, sampling: { logprobsMode: 'logits' } }, 'sampling.logprobsMode must be raw or processed'],
    [{ taskIds: ['a'], n: 1, sampling: { logprobsMode: 1 } }, 'sampling.logprobsMode must be a string'],
    [{ task_ids: ['a'], n: 1 }, 'taskIds'],
    [{ taskIds: ['a'], n: 65 }, 'n is 65, above bounds.maxSamplesPerTask = 64'],
    [{ taskIds: ['a'], n: 1_000_000_000 }, 'bounds.maxSamplesPerTask'],
    [{ taskIds: Array.from({ length: 10_001 }, (_, i) => `t${i}`), n: 1 }, 'bounds.maxTasksPerBatch = 10000'],
    [{ taskIds: Array.from({ length: 2_000 }, (_, i) => `t${i}`), n: 64 }, 'episodes (tasks × n) is 128000, above bounds.maxEpisodesPerBatch = 100000'],
    [{ taskIds: ['a'], n: 1, concurrency: 513 }, 'bounds.maxConcurrency'],
    [{ taskIds: ['a'], n: 1, limits: { maxTurns: 1001 } }, 'limits.maxTurns is 1001'],
    [{ taskIds: ['a'], n: 1, limits: { maxWallTimeMs: 86_400_001 } }, 'bounds.maxWallTimeMs'],
    [{ taskIds: ['a'], n: 1, sampling: { maxTokens: 262_145 } }, 'bounds.maxTokens'],
    [{ taskIds: ['a'], n: 1, batchId: 'a..b' }, 'batch id "a..b" is not valid'],
    [{ taskIds: ['a'], n: 1, batchId: 'a/b' }, 'batch id "a/b" is not valid'],
  ])('fails the workflow at once (non-retryable) on %j', (request, message) => {
    let caught: unknown;
    try {
      resolveBatchRequest(request as never, 'wf');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ApplicationFailure);
    expect((caught as ApplicationFailure).nonRetryable).toBe(true);
    expect((caught as ApplicationFailure).message).toContain(message);
  });

  it('calls an episode stale only past the bound', () => {
    expect(isStale(3, 5, 2)).toBe(false);
    expect(isStale(2, 5, 2)).toBe(true);
    expect(isStale(2, 5, null)).toBe(false);
    expect(isStale(null, 5, 0)).toBe(false);
  });
});
