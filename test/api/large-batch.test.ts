import { WorkflowFailedError, type Client } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBatchResultActivities } from '../../activities/batch-results.js';
import type { BatchManifest, BatchProgress, BatchRequest } from '../../activities/types.js';
import { DirectoryArtifacts, SqliteStore } from '../../trajectory/index.js';
import { startBatchTestWorker } from '../helpers/batch-worker.js';
import { manifestQuery, progressQuery } from '../../workflows/queries.js';
import { Outcome } from '../../workflows/search-attributes.js';

const taskQueue = `large-batch-${Date.now().toString(36)}`;
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'large-batch-'));
const store = SqliteStore.open(path.join(dataDir, 'store.sqlite'));
const artifacts = new DirectoryArtifacts(path.join(dataDir, 'artifacts'));
let stopWorker: (() => Promise<void>) | undefined;
let client: Client;

beforeAll(async () => {
  const started = await startBatchTestWorker({
    workflowsFile: 'instant-episodes.ts',
    taskQueue,
    activities: {
      ...createBatchResultActivities({ store, artifacts }),
      exportGroup: async (input: { groupId: string }) => ({
        uri: `file:///groups/${input.groupId}.arrow`,
        format: 'arrow-stream',
        rows: 1,
        sha256: 'x',
      }),
      policyVersion: async () => ({ version: 0 }),
    },
  });
  stopWorker = started.stop;
  client = started.client;
});

afterAll(async () => {
  await stopWorker?.();
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a batch of 100,000 episodes', () => {
  it('runs, reports progress, and ends cancelled with a manifest whose counts add up; the worker lives on', async () => {
    const batchId = `large-${Date.now()}`;
    const request: BatchRequest = {
      batchId,
      taskIds: Array.from({ length: 2000 }, (_, i) => `t${i}`),
      n: 50,
      concurrency: 100,
      continueAfterEvents: 1_000,
    };
    const handle = await client.workflow.start('batchWorkflow', {
      taskQueue,
      workflowId: batchId,
      args: [request],
    });

    // Progress advances, across continue-as-new (each run carries counts only).
    const seen: BatchProgress[] = [];
    for (const deadline = Date.now() + 45_000; Date.now() < deadline; await sleep(500)) {
      const progress = await handle.query(progressQuery).catch(() => undefined);
      if (progress) seen.push(progress);
      if (progress && progress.groupsFinished >= 2 && progress.done >= 300) break;
    }
    const last = seen.at(-1)!;
    console.log(`progress after ${seen.length} polls: ${JSON.stringify(last)}`);
    expect(last.total).toBe(100_000);
    expect(last.groupsFinished).toBeGreaterThanOrEqual(2);
    expect(seen.some((p) => p.done < last.done)).toBe(true);
    const metadata = await handle.query<{ currentDetails: string }>('__temporal_workflow_metadata');
    expect(metadata.currentDetails).toMatch(/\/ 100000\*\* episodes ended/);

    // Each child is summarized by its task and sample, and carries `Outcome` from its start.
    const episode = await client.workflow.getHandle(`${batchId}/t0/0`).describe();
    expect(await episode.staticSummary()).toBe('t0 sample 0');
    expect(episode.typedSearchAttributes.get(Outcome)).toBe('running');

    await handle.cancel();
    const error = await handle.result().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkflowFailedError);
    expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    expect((await handle.describe()).status.name).toBe('CANCELLED');

    // The manifest of 100,000 samples is too large for a result: the query points at the whole one.
    const summary = (await handle.query(manifestQuery))!;
    expect(summary).toMatchObject({
      status: 'cancelled',
      groups: [],
      files: [],
      stats: { episodes: 100_000 },
    });
    const manifest = JSON.parse(
      Buffer.from(await artifacts.get(summary.manifest_uri!)).toString('utf8'),
    ) as BatchManifest;
    expect(manifest.status).toBe('cancelled');
    expect(manifest.groups).toHaveLength(2000);
    expect(new Set(manifest.groups.map((g) => g.group_id)).size).toBe(2000);
    const ok = manifest.groups.reduce((sum, g) => sum + g.n_ok, 0);
    const failed = manifest.groups.reduce((sum, g) => sum + g.failures.length, 0);
    expect(ok + failed).toBe(100_000);
    expect(ok).toBeGreaterThanOrEqual(last.ok);
    expect(
      manifest.groups
        .flatMap((g) => g.failures.map((f) => f.reason))
        .every((r) => r === 'cancelled'),
    ).toBe(true);
    expect(
      manifest.groups
        .filter((g) => g.status === 'finished')
        .every((g) => g.n_ok === 50 && g.file !== null),
    ).toBe(true);

    // It continued as new on the way: the run that ended is not the first.
    expect((await handle.describe()).runId).not.toBe(handle.firstExecutionRunId);

    // The worker is still there: a small batch on it completes.
    const small = await client.workflow.execute('batchWorkflow', {
      taskQueue,
      workflowId: `${batchId}-after`,
      args: [{ taskIds: ['t0'], n: 2 }],
    });
    expect(small).toMatchObject({ status: 'complete', stats: { episodes: 2 } });
  });
});
