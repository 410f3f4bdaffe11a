import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchManifest, BatchProgress } from '../../activities/types.js';
import { buildBatchInput, followBatch, startBatch } from '../../stack/batches.js';
import { startStack, type Stack } from '../../stack/stack.js';
import { builtinPackDir, loadTasks } from '../../tasks/loader.js';
import { scriptForTask } from '../../tasks/solution-script.js';
import { statusQuery } from '../../workflows/queries.js';
import { readTrajectories } from '../helpers/arrow.js';
import { startTestEngines, testConfig, type TestEngines } from '../helpers/stack.js';
import { expectConsistentRow } from '../helpers/trajectory-checks.js';

let engines: TestEngines;
let stack: Stack;
let manifest: BatchManifest;
const batchId = `e2e-${Date.now()}`;
const badRequests: { status: number; body: unknown }[] = [];
const progress: BatchProgress[] = [];

// The whole batch runs here: on a loaded 2-core machine it can take minutes, past the default hook bound.
beforeAll(async () => {
  engines = await startTestEngines({ count: 2, wanderProbability: 0.4 });
  // A small event budget makes the batch continue-as-new several times at this scale.
  const config = testConfig({ engines: engines.instances, batch: { concurrency: 6, continueAfterEvents: 60 } });
  stack = await startStack(config);
  const input = await buildBatchInput(config, { batchId, tasks: 'builtin', n: 2, agent: 'builtin' });
  const handle = await startBatch(stack.client, config, input);
  let poked = false;
  manifest = await followBatch(
    handle,
    (p) => {
      progress.push(p);
      if (poked || p.done === 0) return;
      poked = true;
      // Bad input while the batch runs: clear errors, and the batch must not notice.
      void (async () => {
        for (const [headers, body] of [
          [{ authorization: 'Bearer sk-not-a-session' }, { messages: [{ role: 'user', content: 'hi' }] }],
          [{ authorization: 'Bearer sk-not-a-session' }, { messages: 'not a list' }],
        ] as const) {
          const r = await fetch(`${stack.gatewayUrl}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
          badRequests.push({ status: r.status, body: await r.json() });
        }
      })();
    },
    250,
  );
}, 600_000);

afterAll(async () => {
  await stack?.stop();
  await engines?.close();
});

describe('a batch of the built-in task pack on a real Temporal server', () => {
  it('completes every episode and groups the samples per task', () => {
    expect(manifest.schema).toBe('agent-rollout/v1');
    expect(manifest.status).toBe('complete');
    expect(manifest.groups).toHaveLength(8);
    for (const group of manifest.groups) {
      expect(group.n_ok).toBe(2);
      expect(group.group_id).not.toContain('_');
      const uniform = group.rewards.every((r) => r === group.rewards[0]);
      expect(group.status).toBe(uniform ? 'filtered' : 'finished');
    }
    expect(manifest.stats.episodes).toBe(16);
  });

  it('counted finished groups in its progress as they ended, across continue-as-new', () => {
    const counts = progress.map((p) => p.groupsFinished);
    expect(counts.some((c) => c > 0 && c < 8)).toBe(true);
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
    expect(progress.every((p) => p.stale === 0)).toBe(true);
  });

  it('gives every episode the reward its hidden tests decide', async () => {
    const tasks = new Map((await loadTasks(builtinPackDir())).map((t) => [t.instance_id, scriptForTask(t)]));
    const episodes = (await stack.store.listEpisodes(batchId));
    expect(episodes).toHaveLength(16);
    for (const episode of episodes) {
      // The scripted policy's first thought says which path it took: the solution or a wrong turn.
      const turns = await stack.store.loadTurns(episode.sessionId!);
      const first = turns[0]!;
      // The close checked every chain (on the gateway's drift worker thread): tool turns render as the engine saw them.
      const chains = [...new Set(turns.map((t) => t.chainIndex))];
      expect(await stack.store.loadChainReports(episode.sessionId!)).toEqual(chains.map((chainIndex) => ({ chainIndex, driftOffset: -1, driftTurns: 0 })));
      const thought = (JSON.parse(first.replyJson) as { reasoning_content?: string }).reasoning_content;
      const script = tasks.get(episode.taskId)!;
      expect([script.solve[0]!.thought, script.wander[0]!.thought]).toContain(thought);
      expect(episode.reward, `${episode.episodeId}`).toBe(thought === script.solve[0]!.thought ? 1 : 0);
      expect(episode.rewardInfo.passed).toBeGreaterThan(0);
    }
  });

  it('exports token-exact trajectories of each finished group to its own file', () => {
    const finished = manifest.groups.filter((g) => g.status === 'finished');
    expect(manifest.files).toEqual(finished.map((g) => g.file));
    for (const group of manifest.groups) if (group.status !== 'finished') expect(group.file).toBeNull();
    const rows = finished.flatMap((group) => {
      const groupRows = readTrajectories(group.file!.uri);
      expect(groupRows.length).toBe(group.file!.rows);
      expect(new Set(groupRows.map((r) => r.group_id))).toEqual(new Set([group.group_id]));
      return groupRows;
    });
    expect(manifest.stats.chains).toBe(rows.length);
    for (const row of rows) {
      expectConsistentRow(row, engines.recorded);
      expect(row.trajectory_id).toBe(`${row.group_id}_${row.episode_index}_${row.chain_index}`);
      expect(row.reward).toBe(manifest.groups.find((g) => g.group_id === row.group_id)!.rewards[row.episode_index]);
    }
    // Each episode appears once: one final chain per (group, sample).
    const finals = rows.filter((r) => r.is_final_chain).map((r) => r.episode_id);
    expect(new Set(finals).size).toBe(finals.length);
    expect(finals.length).toBe(finished.length * 2);
  });

  it('answered bad requests with clear errors without disturbing the batch', () => {
    expect(badRequests).toHaveLength(2);
    expect(badRequests[0]).toMatchObject({ status: 401, body: { error: { type: 'authentication_error' } } });
    expect(badRequests[1]).toMatchObject({ status: 400, body: { error: { type: 'invalid_request_error' } } });
  });

  it('continued as new to stay within history limits, and shows episodes in the UI by search attributes', async () => {
    let runs = 0;
    for await (const _ of stack.client.workflow.list({ query: `WorkflowId = "${batchId}"` })) runs++;
    expect(runs).toBeGreaterThan(1);
    let ok = 0;
    for await (const _ of stack.client.workflow.list({ query: `BatchId = "${batchId}" AND Outcome = "ok"` })) ok++;
    expect(ok).toBe(16);
    const status = await stack.client.workflow.getHandle(`${batchId}/js-ini-parser-1/0`).query(statusQuery);
    expect(status).toMatchObject({ phase: 'done', outcome: 'ok' });
    expect(status.turns).toBeGreaterThan(0);
  });
});
