import { WorkflowNotFoundError, type WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayAdminClient } from '../../activities/gateway-admin.js';
import type { BatchManifest, StaleAction } from '../../activities/types.js';
import type { ToolCall } from '../../gateway/codec/messages.js';
import { buildBatchInput, startBatch } from '../../stack/batches.js';
import type { Config } from '../../stack/config.js';
import { adminToken } from '../../stack/paths.js';
import { startStack, type Stack } from '../../stack/stack.js';
import { builtinPackDir, loadTasks } from '../../tasks/loader.js';
import type { SqliteStore, TrajectoryRow } from '../../trajectory/index.js';
import type { batchWorkflow } from '../../workflows/batch.js';
import { episodeIdOf } from '../../workflows/batch.js';
import { progressQuery } from '../../workflows/queries.js';
import { readTrajectories } from '../helpers/arrow.js';
import { startTestEngines, testConfig, type TestEngines } from '../helpers/stack.js';

const N = 2;
/** Two episodes at once over six: the batch starts some episodes only after the bump. */
const CONCURRENCY = 2;
/** Episode ids of re-runs: `<batch>/<task>/<sample>.r<k>`. */
const RERUN_ID = /\.r\d+$/;

/** What the test saw at the weight update, with generation paused so nothing could move. */
interface Bump {
  oldVersion: number;
  newVersion: number;
  /** Episodes the batch had already judged: at the old version, so kept. */
  judgedBefore: Set<string>;
  /** Running episodes with tokens of the old version that must sample again before they end. */
  midRun: Set<string>;
}

interface Run {
  manifest: BatchManifest;
  bump: Bump;
}

let engines: TestEngines;
let stack: Stack;
let config: Config;
let admin: GatewayAdminClient;
let taskIds: string[];
const runs = new Map<StaleAction, Run>();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The newest session of an episode, as the gateway stored it. */
function latestSession(episodeId: string): { sessionId: string; status: string } | undefined {
  const row = (stack.store as SqliteStore).db
    .prepare('SELECT session_id, status FROM sessions WHERE episode_id = ? ORDER BY attempt DESC LIMIT 1')
    .get(episodeId) as { session_id: string; status: string } | undefined;
  return row && { sessionId: row.session_id, status: row.status };
}

async function liveTurns(sessionId: string) {
  return (await stack.store.loadTurns(sessionId)).filter((t) => !t.rolledBack);
}

/** Policy versions of every live sampled token of a session. */
async function sampledVersions(sessionId: string): Promise<number[]> {
  return (await liveTurns(sessionId)).flatMap((t) => t.sampledVersions);
}

/**
 * Mid-run: the open session's last turn asked for tools other than `submit`, so the episode
 * cannot end before it calls the model again. Fresh: no turn yet, so every token it samples
 * comes later. Ending: anything else (it may finish without sampling again).
 */
async function runningState(episodeId: string): Promise<'mid-run' | 'fresh' | 'ending'> {
  const session = latestSession(episodeId);
  if (!session) return 'fresh';
  if (session.status !== 'open') return 'ending';
  const turns = await liveTurns(session.sessionId);
  if (turns.length === 0) return 'fresh';
  const last = turns[turns.length - 1]!;
  // `submit` ends the built-in agent's episode without another model call.
  const calls = (JSON.parse(last.replyJson) as { tool_calls?: ToolCall[] }).tool_calls ?? [];
  return last.finishReason === 'tool_call' && !calls.some((c) => c.name === 'submit') ? 'mid-run' : 'ending';
}

async function workflowState(id: string): Promise<'running' | 'closed' | 'absent'> {
  try {
    return (await stack.client.workflow.getHandle(id).describe()).status.name === 'RUNNING' ? 'running' : 'closed';
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return 'absent';
    throw error;
  }
}

/**
 * Pauses the policy and looks at every episode. The bump counts only when the picture is
 * unambiguous: every ended episode was already judged (at the old version), every running one is
 * either mid-run or fresh, and there is at least one of each: judged, mid-run, not started. Otherwise
 * generation resumes at the same version, which makes nothing stale, and the caller tries again.
 * A turn is committed to the store in the gateway's own process before its pause answers over
 * HTTP, so the store shows every turn sampled before the pause.
 */
async function tryBump(handle: WorkflowHandle<typeof batchWorkflow>, ids: string[]): Promise<Bump | null> {
  if (!(await Promise.all(ids.map(runningState))).includes('mid-run')) return null;
  const { version } = await admin.pausePolicy('finish');
  const before = await handle.query(progressQuery);
  const states = await Promise.all(ids.map(workflowState));
  const after = await handle.query(progressQuery);
  const closed = ids.filter((_, i) => states[i] === 'closed');
  const running = ids.filter((_, i) => states[i] === 'running');
  const runningStates = await Promise.all(running.map(runningState));
  const midRun = running.filter((_, i) => runningStates[i] === 'mid-run');
  const clear =
    before.done === after.done &&
    closed.length === after.done &&
    after.done > 0 &&
    midRun.length > 0 &&
    states.includes('absent') &&
    !runningStates.includes('ending');
  if (!clear) {
    await admin.resumePolicy(version);
    return null;
  }
  await admin.resumePolicy(version + 1);
  return { oldVersion: version, newVersion: version + 1, judgedBefore: new Set(closed), midRun: new Set(midRun) };
}

async function runBatch(staleAction: StaleAction): Promise<Run> {
  const batchId = `stale-${staleAction}-${Date.now()}`;
  const input = await buildBatchInput(config, {
    batchId,
    tasks: 'builtin',
    taskIds,
    n: N,
    agent: 'builtin',
    concurrency: CONCURRENCY,
    filterUniformGroups: false,
    maxStaleness: 0,
    staleAction,
  });
  const handle = await startBatch(stack.client, config, input);
  const ids = taskIds.flatMap((taskId) => Array.from({ length: N }, (_, sample) => episodeIdOf(batchId, taskId, sample)));
  const result = handle.result();
  let ended = false;
  void result.finally(() => (ended = true)).catch(() => undefined);
  let bump: Bump | null = null;
  while (!bump && !ended) {
    bump = await tryBump(handle, ids);
    if (!bump) await sleep(100);
  }
  const manifest = await result;
  if (!bump) throw new Error(`batch ${batchId} ended before an episode was caught mid-run; make its episodes slower`);
  return { manifest, bump };
}

function groupRows(manifest: BatchManifest): TrajectoryRow[] {
  return manifest.files.flatMap((file) => readTrajectories(file.uri));
}

function sampledTokenVersions(row: TrajectoryRow): number[] {
  return row.token_version.filter((_, i) => row.sampled_mask[i] === 1);
}

/** Group id and sample index of an episode id `<batch>/<task>/<sample>[.r<k>]`. */
function sampleOf(run: Run, episodeId: string): { groupId: string; sample: number } {
  const [, taskId, sample] = episodeId.split('/') as [string, string, string];
  const group = run.manifest.groups.find((g) => g.task_id === taskId)!;
  return { groupId: group.group_id, sample: Number.parseInt(sample, 10) };
}

beforeAll(async () => {
  // Slow enough that an episode is caught between turns; tools run in real sandboxes meanwhile.
  engines = await startTestEngines({ count: 2, wanderProbability: 0.4, timeScale: 0.05 });
  config = testConfig({ engines: engines.instances });
  stack = await startStack(config);
  admin = new GatewayAdminClient({ urls: [stack.gatewayUrl], adminToken: adminToken(config.dataDir) });
  taskIds = (await loadTasks(builtinPackDir())).slice(0, 3).map((t) => t.instance_id);
  runs.set('drop', await runBatch('drop'));
  runs.set('rerun', await runBatch('rerun'));
}, 600_000);

afterAll(async () => {
  await stack?.stop();
  await engines?.close();
});

describe('a staleness bound of 0 with a weight update in the middle of a batch', () => {
  it('tags each episode with the versions it sampled: mid-run ones span the update, later ones are new', async () => {
    for (const run of runs.values()) {
      const { oldVersion, newVersion, judgedBefore, midRun } = run.bump;
      const episodes = (await stack.store.listEpisodes(run.manifest.batch_id)).filter((e) => !RERUN_ID.test(e.episodeId));
      expect(episodes).toHaveLength(taskIds.length * N);
      let fresh = 0;
      for (const episode of episodes) {
        const versions = await sampledVersions(episode.sessionId!);
        const span = [Math.min(...versions), Math.max(...versions)];
        if (midRun.has(episode.episodeId)) expect(span, episode.episodeId).toEqual([oldVersion, newVersion]);
        else if (judgedBefore.has(episode.episodeId)) expect(span, episode.episodeId).toEqual([oldVersion, oldVersion]);
        else {
          expect(span, episode.episodeId).toEqual([newVersion, newVersion]);
          fresh += 1;
        }
      }
      expect(fresh).toBeGreaterThan(0);
      expect(midRun.size).toBeGreaterThan(0);
      expect(judgedBefore.size).toBeGreaterThan(0);
    }
  });

  it('drop: reports the mid-run episodes stale, leaves their rows out, keeps the rest', () => {
    const run = runs.get('drop')!;
    const { oldVersion, newVersion, judgedBefore, midRun } = run.bump;
    const { manifest } = run;
    expect(manifest.stats.stale).toBe(midRun.size);
    expect(manifest.status).toBe('partial');
    const failures = manifest.groups.flatMap((g) => g.failures.map((f) => ({ groupId: g.group_id, sample: f.episode_index, reason: f.reason })));
    const expected = [...midRun].map((id) => sampleOf(run, id));
    expect(failures.map(({ groupId, sample }) => ({ groupId, sample }))).toEqual(expect.arrayContaining(expected));
    expect(failures).toHaveLength(expected.length);
    for (const failure of failures) {
      expect(failure.reason).toBe(`stale: min_version ${oldVersion}, policy version ${newVersion}, max staleness 0`);
    }
    for (const group of manifest.groups) {
      const dropped = expected.filter((e) => e.groupId === group.group_id).map((e) => e.sample);
      group.rewards.forEach((reward, sample) => expect(reward === null, `${group.group_id}/${sample}`).toBe(dropped.includes(sample)));
    }

    const rows = groupRows(manifest);
    const exported = new Set(rows.map((r) => r.episode_id));
    const all = taskIds.flatMap((taskId) => Array.from({ length: N }, (_, s) => episodeIdOf(manifest.batch_id, taskId, s)));
    expect(exported).toEqual(new Set(all.filter((id) => !midRun.has(id))));
    for (const row of rows) {
      const version = judgedBefore.has(row.episode_id) ? oldVersion : newVersion;
      expect(new Set(sampledTokenVersions(row)), row.trajectory_id).toEqual(new Set([version]));
      expect([row.min_version, row.max_version]).toEqual([version, version]);
    }
  });

  it('rerun: re-runs each mid-run episode as .r1 on the new version and exports it in its place', async () => {
    const run = runs.get('rerun')!;
    const { oldVersion, newVersion, judgedBefore, midRun } = run.bump;
    const { manifest } = run;
    expect(manifest.stats.stale).toBe(midRun.size);
    expect(manifest.status).toBe('complete');
    for (const group of manifest.groups) {
      expect(group.failures).toEqual([]);
      expect(group.rewards.every((r) => r !== null)).toBe(true);
    }

    const stored = new Map((await stack.store.listEpisodes(manifest.batch_id)).map((e) => [e.episodeId, e]));
    const rows = groupRows(manifest);
    for (const id of midRun) {
      const rerun = stored.get(`${id}.r1`);
      expect(rerun, `${id}.r1`).toBeDefined();
      expect(new Set(await sampledVersions(rerun!.sessionId!))).toEqual(new Set([newVersion]));
      const { groupId, sample } = sampleOf(run, id);
      expect(manifest.groups.find((g) => g.group_id === groupId)!.rewards[sample]).toBe(rerun!.reward);
      const sampleRows = rows.filter((r) => r.group_id === groupId && r.episode_index === sample);
      expect(sampleRows.length).toBeGreaterThan(0);
      expect(new Set(sampleRows.map((r) => r.episode_id))).toEqual(new Set([`${id}.r1`]));
    }
    // Only stale samples were re-run, each once.
    const reruns = [...stored.keys()].filter((id) => RERUN_ID.test(id));
    expect(new Set(reruns)).toEqual(new Set([...midRun].map((id) => `${id}.r1`)));

    const all = taskIds.flatMap((taskId) => Array.from({ length: N }, (_, s) => episodeIdOf(manifest.batch_id, taskId, s)));
    expect(new Set(rows.map((r) => r.episode_id))).toEqual(new Set(all.map((id) => (midRun.has(id) ? `${id}.r1` : id))));
    for (const row of rows) {
      const version = judgedBefore.has(row.episode_id) ? oldVersion : newVersion;
      expect(new Set(sampledTokenVersions(row)), row.trajectory_id).toEqual(new Set([version]));
    }
  });
});
