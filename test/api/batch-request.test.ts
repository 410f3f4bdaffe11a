import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { ConfigSchema, episodeLimits } from '../../stack/config.js';
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

  it('merges partial limits and sampling key by key', () => {
    const input = resolveBatchRequest({ taskIds: ['a'], n: 1, batchId: 'b', limits: { maxTurns: 3 }, sampling: { temperature: 0 }, staleAction: 'rerun', maxStaleness: 1 }, 'wf');
    expect(input.batchId).toBe('b');
    expect(input.limits).toEqual({ ...BATCH_DEFAULTS.limits, maxTurns: 3 });
    expect(input.sampling).toEqual({ ...BATCH_DEFAULTS.sampling, temperature: 0 });
    expect(resolveBatchRequest({ taskIds: ['a'], n: 1, timeouts: { scheduleToStartMs: 10_000 } }, 'wf').timeouts).toEqual({ ...BATCH_DEFAULTS.timeouts, scheduleToStartMs: 10_000 });
    expect(input).toMatchObject({ staleAction: 'rerun', maxStaleness: 1 });
  });

  it.each([
    [{ taskIds: [], n: 1 }, 'taskIds'],
    [{ taskIds: ['a'], n: 0 }, 'n must'],
    [{ taskIds: ['a'], n: 1.5 }, 'n must'],
    [{ taskIds: ['a'], n: 1, staleAction: 'keep' }, 'staleAction'],
    [{ taskIds: ['a'], n: 1, maxStaleness: -1 }, 'maxStaleness'],
    [{ taskIds: ['a'], n: 1, limits: { maxTurn: 3 } }, 'limits.maxTurn'],
    [{ taskIds: ['a'], n: 1, sampling: { temperature: '1' } }, 'sampling.temperature'],
    [{ task_ids: ['a'], n: 1 }, 'taskIds'],
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
