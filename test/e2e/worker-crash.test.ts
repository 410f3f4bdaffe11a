import { afterAll, describe, expect, it } from 'vitest';
import { buildBatchInput, followBatch, startBatch } from '../../stack/batches.js';
import { startStack, type Stack } from '../../stack/stack.js';
import { readTrajectories } from '../helpers/arrow.js';
import { spawnWorker, waitForExit } from '../helpers/processes.js';
import { startTestEngines, testConfig, type TestEngines } from '../helpers/stack.js';
import { expectConsistentRow } from '../helpers/trajectory-checks.js';

let engines: TestEngines | undefined;
let stack: Stack | undefined;
const workers: ReturnType<typeof spawnWorker>[] = [];

afterAll(async () => {
  for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
  await stack?.stop();
  await engines?.close();
});

describe('a worker killed in the middle of a batch', () => {
  it('is replaced by a new worker and every episode is delivered exactly once', { timeout: 240_000 }, async () => {
    engines = await startTestEngines({ count: 2, timeScale: 0.05 });
    const config = testConfig({ engines: engines.instances, batch: { concurrency: 4 } });
    stack = await startStack(config, { worker: false });
    const first = spawnWorker(config, stack.gatewayUrl);
    workers.push(first);

    const batchId = `crash-${Date.now()}`;
    const input = await buildBatchInput(config, { batchId, tasks: 'builtin', n: 2, agent: 'builtin' });
    const handle = await startBatch(stack.client, config, input);
    let killedAt: number | undefined;
    // If the batch stalls, say where before the test times out.
    const watchdog = setTimeout(async () => {
      const description = await handle.describe();
      const children = await Promise.all(
        (description.raw.pendingChildren ?? []).map(async (c) => {
          const child = await stack!.client.workflow.getHandle(c.workflowId!).describe();
          return { id: c.workflowId, pending: (child.raw.pendingActivities ?? []).map((a) => ({ type: a.activityType?.name, state: a.state, attempt: a.attempt, failure: a.lastFailure?.message })) };
        }),
      );
      console.error('worker-crash test stalled', JSON.stringify({ killedAt, children, workers: workers.map((w) => w.output().slice(-2000)) }, null, 2));
    }, 150_000);
    const manifest = await followBatch(
      handle,
      (p) => {
        if (killedAt === undefined && p.done >= 3 && p.running > 0) {
          killedAt = p.done;
          first.child.kill('SIGKILL');
          void waitForExit(first.child).then(() => workers.push(spawnWorker(config, stack!.gatewayUrl)));
        }
      },
      200,
    );

    clearTimeout(watchdog);
    expect(killedAt, first.output()).toBeDefined();
    expect(killedAt!).toBeLessThan(16);
    expect(first.child.signalCode).toBe('SIGKILL');
    expect(manifest.status).toBe('complete');
    expect(manifest.groups.every((g) => g.n_ok === 2)).toBe(true);

    const episodes = (await stack.store.listEpisodes(batchId));
    expect(episodes).toHaveLength(16);
    expect(new Set(episodes.map((e) => e.episodeId)).size).toBe(16);
    const rows = manifest.files.flatMap((f) => readTrajectories(f.uri));
    const finals = rows.filter((r) => r.is_final_chain);
    expect(new Set(finals.map((r) => r.episode_id)).size).toBe(finals.length);
    const finished = manifest.groups.filter((g) => g.status === 'finished').length;
    expect(finals).toHaveLength(finished * 2);
    for (const row of rows) expectConsistentRow(row, engines.recorded);
  });
});
