import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchManifest } from '../../activities/types.js';
import { endedBatchManifest } from '../../stack/batch-manifest.js';
import { buildBatchInput, followBatch, startBatch } from '../../stack/batches.js';
import { startStack, type Stack } from '../../stack/stack.js';
import { startTestEngines, testConfig, type TestEngines } from '../helpers/stack.js';

/**
 * Admission slots are scarce (one engine, two episodes at once) and leases live for the default
 * ten minutes: a lease a cancelled episode left behind would hold a slot for that long, so the
 * second batch could not finish within the test's time.
 */
let engines: TestEngines;
let stack: Stack;
let cancelled: BatchManifest;
let cancelledStatus: string;
let leasesAfterCancel: number;
let second: BatchManifest;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  engines = await startTestEngines({ count: 1, timeScale: 0.05 });
  const config = testConfig({ engines: [{ ...engines.instances[0]!, kvCapacityTokens: 200_000 }], admission: { episodeTokens: 100_000 }, batch: { concurrency: 8 } });
  stack = await startStack(config);
  const first = await startBatch(stack.client, config, await buildBatchInput(config, { batchId: `cancel-${Date.now()}`, tasks: 'builtin', n: 4, agent: 'builtin' }));
  // Cancel once episodes run and others wait for a slot.
  for (let i = 0; i < 600 && (await stack.store.listLeases()).length < 2; i++) await sleep(100);
  await sleep(1_000);
  await first.cancel();
  cancelled = await endedBatchManifest(first);
  cancelledStatus = (await first.describe()).status.name;
  leasesAfterCancel = (await stack.store.listLeases()).length;
  const next = await startBatch(stack.client, config, await buildBatchInput(config, { batchId: `after-${Date.now()}`, tasks: 'builtin', taskIds: ['py-slugify-1', 'js-lru-cache-1'], n: 2, agent: 'builtin' }));
  second = await followBatch(next, () => undefined, 500);
}, 240_000);

afterAll(async () => {
  await stack?.stop();
  await engines?.close();
});

describe('a batch cancelled while its episodes wait for admission', () => {
  it('ends cancelled, in Temporal and in its manifest, and leaves no admission lease behind', () => {
    expect(cancelledStatus).toBe('CANCELLED');
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.groups.some((g) => g.failures.some((f) => f.reason === 'cancelled'))).toBe(true);
    expect(leasesAfterCancel).toBe(0);
  });

  it('lets the next batch take every slot at once and complete', async () => {
    expect(second.status).toBe('complete');
    expect(second.stats.episodes).toBe(4);
    expect(await stack.store.listLeases()).toEqual([]);
  });
});
