import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { DeterminismViolationError } from '@temporalio/workflow';
import { bundleWorkflowCode, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { bundleWorkflows, installWorkerRuntime } from '../../workers/worker.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = path.join(here, 'histories');
const histories = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .map((file) => ({ file, workflowId: file.replace(/\.json$/, ''), history: historyFromJSON(JSON.parse(readFileSync(path.join(dir, file), 'utf8'))) }));

let production: WorkflowBundleWithSourceMap;
let altered: WorkflowBundleWithSourceMap;
beforeAll(async () => {
  installWorkerRuntime();
  production = await bundleWorkflows();
  altered = await bundleWorkflowCode({ workflowsPath: path.join(here, 'altered-workflows.ts'), logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} } });
});

describe('workflow replay of recorded histories (npm run replay:record)', () => {
  it('has histories of batch runs (one continued as new, with finishedGroups updates) and episodes', () => {
    const batches = histories.filter((h) => h.file.startsWith('replay-batch.'));
    expect(batches.length).toBeGreaterThan(1);
    expect(batches.some((h) => h.history.events?.some((e) => e.workflowExecutionUpdateAcceptedEventAttributes))).toBe(true);
    expect(histories.filter((h) => h.file.includes('_')).length).toBeGreaterThan(0);
  });

  it.each(histories.map((h) => [h.file, h] as const))('replays %s with the current workflow code', async (_file, h) => {
    await Worker.runReplayHistory({ workflowBundle: production }, h.history, h.workflowId);
  });

  it('fails on a workflow change that breaks determinism', async () => {
    const episode = histories.find((h) => h.file.includes('_'))!;
    await expect(Worker.runReplayHistory({ workflowBundle: altered }, episode.history, episode.workflowId)).rejects.toBeInstanceOf(DeterminismViolationError);
  });
});
