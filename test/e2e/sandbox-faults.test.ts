import { afterAll, describe, expect, it } from 'vitest';
import { buildBatchInput, followBatch, startBatch } from '../../stack/batches.js';
import { startStack, type Stack } from '../../stack/stack.js';
import { startTestEngines, testConfig, type TestEngines } from '../helpers/stack.js';

let engines: TestEngines | undefined;
let stack: Stack | undefined;

afterAll(async () => {
  await stack?.stop();
  await engines?.close();
});

/** Retries of `createSandbox` recorded in an episode's history (attempt > 1 means earlier tries failed). */
async function failedCreates(s: Stack, workflowId: string): Promise<number> {
  const history = await s.client.workflow.getHandle(workflowId).fetchHistory();
  const scheduled = new Map<string, string>();
  let failures = 0;
  for (const event of history.events ?? []) {
    const id = String(event.eventId);
    if (event.activityTaskScheduledEventAttributes) scheduled.set(id, event.activityTaskScheduledEventAttributes.activityType?.name ?? '');
    const started = event.activityTaskStartedEventAttributes;
    if (started && scheduled.get(String(started.scheduledEventId)) === 'createSandbox') failures += (started.attempt ?? 1) - 1;
  }
  return failures;
}

describe('sandbox creation failing 30% of the time', () => {
  it('still completes every episode', async () => {
    engines = await startTestEngines({ count: 1, wanderProbability: 0 });
    const config = testConfig({ engines: engines.instances, sandbox: { createFailureRate: 0.3, faultSeed: 3 }, batch: { concurrency: 8 } });
    stack = await startStack(config);
    const batchId = `faults-${Date.now()}`;
    const input = await buildBatchInput(config, { batchId, tasks: 'builtin', n: 2, agent: 'builtin' });
    const manifest = await followBatch(await startBatch(stack.client, config, input), () => undefined);

    expect(manifest.status).toBe('complete');
    expect(manifest.groups.flatMap((g) => g.rewards)).toEqual(new Array(16).fill(1));
    let injected = 0;
    for (const e of (await stack.store.listEpisodes(batchId))) injected += await failedCreates(stack, e.episodeId);
    // Seeded injection: the failures really happened and were absorbed by retries.
    expect(injected).toBeGreaterThan(0);
  });
});
