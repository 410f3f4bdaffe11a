/**
 * The reward activity itself (activities/index.ts `computeReward`) over a real sandbox whose agent
 * deleted its `.git`: the episode gets its reward instead of an error that would retry it into
 * `infra_error`. Temporal's activity environment supplies only the activity context.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../activities/index.js';
import { TaskCatalog } from '../../activities/task-catalog.js';
import { AdmissionControl } from '../../scheduler/index.js';
import { BubblewrapProvider } from '../../sandbox/bubblewrap.js';
import { BaseImageOnlyStore } from '../../sandbox/images/base-only.js';
import { DirectoryArtifacts, SqliteStore } from '../../trajectory/index.js';
import { removeDirs, tempDir } from '../sandbox/helpers.js';
import { PY_FIX, pythonTask } from './fixtures.js';

const dirs: string[] = [];
let provider: BubblewrapProvider;
let store: SqliteStore;
let activities: ReturnType<typeof createActivities>;
let taskSource: string;
let taskId: string;
let workspaceDir: string;
let n = 0;

beforeAll(async () => {
  const root = await tempDir('reward-activity');
  dirs.push(root);
  const { task, dir } = await pythonTask();
  dirs.push(dir);
  workspaceDir = dir;
  taskId = task.instance_id;
  taskSource = join(root, 'tasks.jsonl');
  await writeFile(taskSource, `${JSON.stringify(task)}\n`);
  provider = new BubblewrapProvider({ rootDir: join(root, 'sandboxes') });
  store = SqliteStore.open(':memory:');
  activities = createActivities({
    store,
    admission: await AdmissionControl.create(
      store,
      [{ name: 'i0', kind: 'vllm', url: 'http://127.0.0.1:1', kvCapacityTokens: 40_000 }],
      { episodeTokens: 10_000, leaseTtlMs: 60_000 },
    ),
    sandbox: provider,
    images: new BaseImageOnlyStore(),
    tasks: new TaskCatalog(),
    gateway: { urls: ['http://127.0.0.1:1'], adminToken: 'unused' },
    hostQueue: 'host',
    agentStateDir: join(root, 'agent-state'),
    artifacts: new DirectoryArtifacts(join(root, 'artifacts')),
    maxOutputBytes: 64 * 1024,
    sandboxTtlMs: 60 * 60 * 1000,
    sandboxTmpHostDir: (id) => provider.tmpHostDir(id),
    agentLogDir: join(root, 'logs'),
    hostTtlMs: 60 * 60 * 1000,
  });
});

afterAll(async () => {
  await store.close();
  await provider.release();
  await removeDirs(dirs);
});

async function rewardOf(files: Record<string, string>, script: string): Promise<unknown> {
  const episodeId = `activity-${process.pid}-${n++}`;
  const { id } = await provider.create({ idempotencyKey: `${episodeId}:0`, workspaceDir });
  try {
    for (const [path, content] of Object.entries(files))
      await provider.writeFile(id, path, content);
    expect((await provider.exec(id, { shell: script })).exitCode).toBe(0);
    return await new MockActivityEnvironment().run(activities.computeReward, {
      episodeId,
      attempt: 0,
      instance: 'i0',
      sandboxId: id,
      taskSource,
      taskId,
    });
  } finally {
    await provider.destroy(id);
  }
}

describe('computeReward', () => {
  it('scores an agent that deleted or corrupted its .git', async () => {
    expect(await rewardOf({}, 'rm -rf .git')).toMatchObject({ reward: 0, reason: 'unresolved' });
    expect(await rewardOf(PY_FIX, 'rm -rf .git/objects && echo junk > .git/HEAD')).toMatchObject({
      reward: 1,
      reason: 'resolved',
    });
  });
});
