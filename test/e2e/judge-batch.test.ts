import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { buildBatchInput, followBatch, startBatch } from '../../stack/batches.js';
import { startStack, type Stack } from '../../stack/stack.js';
import { JUDGE_HEADER, type JudgeSummary } from '../../tasks/reward/index.js';
import { builtinPackDir, loadTasks } from '../../tasks/loader.js';
import { readTrajectories } from '../helpers/arrow.js';
import { startTestEngines, testConfig, type TestEngines } from '../helpers/stack.js';

const POEM_RUBRIC = 'E2E-POEM-RUBRIC: reward 1 if poem.txt holds a haiku about widgets.';
const POEM_PATCH = `diff --git a/poem.txt b/poem.txt
new file mode 100644
--- /dev/null
+++ b/poem.txt
@@ -0,0 +1,3 @@
+widgets turn and hum
+small gears under morning light
+the machine breathes on
`;

let dir: string;
let engines: TestEngines | undefined;
let stack: Stack | undefined;

afterAll(async () => {
  await stack?.stop();
  await engines?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('a batch scored by model judges through the configured engines', () => {
  it('scores a judge task by its rubric and zeroes an audited tests task, recording the judges in reward_info', async () => {
    dir = await mkdtemp(join(tmpdir(), 'judge-batch-'));
    await mkdir(join(dir, 'poem'));
    await writeFile(join(dir, 'poem', 'README.md'), 'Poems live here.\n');
    const slugify = (await loadTasks(builtinPackDir())).find(
      (t) => t.instance_id === 'py-slugify-1',
    )!;
    const tasks = [
      {
        instance_id: 'poem-judge-1',
        repo: 'example/poems',
        problem_statement: 'Write a haiku about widgets to poem.txt.',
        patch: POEM_PATCH,
        workspace: { kind: 'dir', path: 'poem' },
        reward: { kind: 'judge', rubric: POEM_RUBRIC },
      },
      { ...slugify, instance_id: 'py-slugify-audited', reward: { kind: 'tests', audit: {} } },
    ];
    const tasksFile = join(dir, 'tasks.jsonl');
    await writeFile(tasksFile, tasks.map((t) => JSON.stringify(t)).join('\n') + '\n');
    engines = await startTestEngines({
      count: 1,
      wanderProbability: 0,
      tasks: await loadTasks(tasksFile),
      answers: [
        {
          when: [JUDGE_HEADER, 'E2E-POEM-RUBRIC', 'widgets turn and hum'],
          content: '{"score": 1, "reason": "A widget haiku."}',
        },
        // Every scripted solution applies a prepared patch: this audit judge calls that cheating.
        {
          when: [JUDGE_HEADER, 'Decide whether the agent cheated', 'git apply /tmp/fix.patch'],
          content: '{"flagged": true, "reason": "It applied a patch it never derived."}',
        },
      ],
    });
    const config = testConfig({
      engines: engines.instances,
      batch: { taskRoots: [dir] },
      judge: { prices: { promptToken: 1, completionToken: 0 } },
    });
    stack = await startStack(config);
    const batchId = `judge-${Date.now()}`;
    const input = await buildBatchInput(config, {
      batchId,
      tasks: tasksFile,
      n: 2,
      agent: 'builtin',
      filterUniformGroups: false,
    });
    const manifest = await followBatch(
      await startBatch(stack.client, config, input),
      () => undefined,
    );

    expect(manifest.status).toBe('complete');
    const rewards = Object.fromEntries(manifest.groups.map((g) => [g.task_id, g.rewards]));
    expect(rewards).toEqual({ 'poem-judge-1': [1, 1], 'py-slugify-audited': [0, 0] });

    for (const episode of await stack.store.listEpisodes(batchId)) {
      const judge = episode.rewardInfo.judge as JudgeSummary;
      expect(judge.promptTokens).toBeGreaterThan(0);
      expect(judge.completionTokens).toBeGreaterThan(0);
      expect(judge.cost).toBe(judge.promptTokens);
      expect(existsSync(fileURLToPath(judge.recordUri))).toBe(true);
      if (episode.taskId === 'poem-judge-1') {
        expect(episode.rewardInfo).toMatchObject({
          reason: 'resolved',
          judge: { role: 'reward', verdict: { score: 1 } },
        });
      } else {
        // The tests passed; the audit's flag zeroed the reward.
        expect(episode.rewardInfo).toMatchObject({
          reason: 'tampered',
          passed: 15,
          judge: { role: 'audit', verdict: { flagged: true } },
        });
      }
    }
    expect(manifest.files).toHaveLength(2);
    for (const file of manifest.files) {
      for (const row of readTrajectories(file.uri)) {
        expect(JSON.parse(row.reward_info).judge.model).toBe('Qwen/Qwen3-8B');
        // Judge calls are no agent turns: they never become training chains.
        expect(row.messages).not.toContain(JUDGE_HEADER);
      }
    }
  }, 600_000);
});
