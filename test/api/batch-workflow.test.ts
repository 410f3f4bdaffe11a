import type { Client } from '@temporalio/client';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  BatchManifest,
  BatchRequest,
  FinishedGroup,
  FinishedGroupsAnswer,
} from '../../activities/types.js';
import { createBatchResultActivities } from '../../activities/batch-results.js';
import { DirectoryArtifacts, SqliteStore } from '../../trajectory/index.js';
import { startBatchTestWorker } from '../helpers/batch-worker.js';
import { finishedGroupsUpdate } from '../../workflows/updates.js';

const taskQueue = `batch-workflow-${Date.now().toString(36)}`;
const exported: { groupId: string; episodeIds: string[] }[] = [];
let stopWorker: (() => Promise<void>) | undefined;
let client: Client;
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'batch-workflow-'));
const store = SqliteStore.open(path.join(dataDir, 'store.sqlite'));

beforeAll(async () => {
  const started = await startBatchTestWorker({
    workflowsFile: 'scripted-episodes.ts',
    taskQueue,
    activities: {
      ...createBatchResultActivities({
        store,
        artifacts: new DirectoryArtifacts(path.join(dataDir, 'artifacts')),
      }),
      // The current policy version is 10: first runs (version 0) are 10 versions behind.
      policyVersion: async () => ({ version: 10 }),
      // The ok episodes the batch recorded, as the real export reads them.
      exportGroup: async (input: { batchId: string; groupId: string }) => {
        const episodeIds = (await store.listBatchResults(input.batchId, [input.groupId])).flatMap(
          (r) => (r.reward === null ? [] : [r.episodeId]),
        );
        exported.push({ groupId: input.groupId, episodeIds });
        return {
          uri: `file:///groups/${input.groupId}.arrow`,
          format: 'arrow-stream',
          rows: episodeIds.length,
          sha256: 'x',
        };
      },
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

const request = (batchId: string, extra: Partial<BatchRequest>): BatchRequest => ({
  batchId,
  taskIds: ['t0', 't1', 't2', 't3', 't4', 't5'],
  n: 2,
  concurrency: 3,
  filterUniformGroups: false,
  ...extra,
});

describe('the batch workflow with scripted episodes on a real Temporal server', () => {
  it('hands every group over exactly once through the update, across continue-as-new', async () => {
    const batchId = `cursor-${Date.now()}`;
    const handle = await client.workflow.start('batchWorkflow', {
      taskQueue,
      workflowId: batchId,
      args: [request(batchId, { continueAfterEvents: 40 })],
    });
    const seen: FinishedGroup[] = [];
    let cursor = 0;
    for (;;) {
      const answer: FinishedGroupsAnswer = await handle
        .executeUpdate(finishedGroupsUpdate, { args: [{ after: cursor }] })
        .catch(() => ({ groups: [], next: cursor, done: false }));
      seen.push(...answer.groups);
      cursor = answer.next;
      if (answer.done) break;
      // The last run ended between two updates: the manifest has the rest.
      if ((await handle.describe()).status.name === 'COMPLETED') break;
    }
    const manifest = (await handle.result()) as BatchManifest;
    expect(seen.length).toBeGreaterThan(0);
    expect(manifest.groups.slice(0, seen.length)).toEqual(seen);
    expect(new Set(manifest.groups.map((g) => g.group_id)).size).toBe(6);
    expect(manifest.status).toBe('complete');
    let runs = 0;
    for await (const _ of client.workflow.list({ query: `WorkflowId = "${batchId}"` })) runs++;
    expect(runs).toBeGreaterThan(1);
  });

  it('drops stale episodes as failures `stale` when staleAction is drop', async () => {
    const batchId = `stale-drop-${Date.now()}`;
    const manifest = (await client.workflow.execute('batchWorkflow', {
      taskQueue,
      workflowId: batchId,
      args: [request(batchId, { maxStaleness: 3 })],
    })) as BatchManifest;
    expect(manifest.stats.stale).toBe(12);
    expect(manifest.status).toBe('partial');
    for (const group of manifest.groups) {
      expect(group).toMatchObject({ status: 'failure', n_ok: 0, file: null });
      expect(group.failures.map((f) => f.reason.split(':')[0])).toEqual(['stale', 'stale']);
    }
  });

  it('re-runs stale episodes when staleAction is rerun, and exports the re-runs', async () => {
    const batchId = `stale-rerun-${Date.now()}`;
    const manifest = (await client.workflow.execute('batchWorkflow', {
      taskQueue,
      workflowId: batchId,
      args: [request(batchId, { maxStaleness: 3, staleAction: 'rerun' })],
    })) as BatchManifest;
    expect(manifest.stats.stale).toBe(12);
    expect(manifest.status).toBe('complete');
    for (const group of manifest.groups)
      expect(group).toMatchObject({ status: 'finished', n_ok: 2, rewards: [0, 1], failures: [] });
    const exports = exported.filter((e) => e.groupId.startsWith(batchId));
    expect(exports).toHaveLength(6);
    for (const e of exports) expect(e.episodeIds.every((id) => id.endsWith('.r1'))).toBe(true);
  });

  it('keeps episodes within the bound', async () => {
    const batchId = `fresh-${Date.now()}`;
    const manifest = (await client.workflow.execute('batchWorkflow', {
      taskQueue,
      workflowId: batchId,
      args: [request(batchId, { maxStaleness: 10 })],
    })) as BatchManifest;
    expect(manifest).toMatchObject({ status: 'complete', stats: { stale: 0 } });
  });
});
