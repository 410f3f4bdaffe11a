import { chmod } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BubblewrapProvider } from '../../sandbox/bubblewrap.js';
import { evaluateReward, parseRewardFile } from '../../tasks/reward/index.js';
import { TaskSchema, type Task } from '../../tasks/schema.js';
import { removeDirs, tempDir, writeTree } from '../sandbox/helpers.js';
import { agentDiff, PY_FILES, PY_FIX } from './fixtures.js';

const dirs: string[] = [];
let provider: BubblewrapProvider;
let workspace: string;
let episode = 0;
const key = (): string => `script-episode-${process.pid}-${episode++}`;

/** A Harbor verifier: runs the checks and writes 1 or 0 where Harbor reads it. */
const TEST_SH = `#!/bin/bash
mkdir -p /logs/verifier
if python3 -c 'from calc import add; assert add(2, 3) == 5'; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
`;

async function verifier(files: Record<string, string>): Promise<string> {
  const dir = await tempDir('verifier');
  dirs.push(dir);
  await writeTree(dir, files);
  // Mounted into the sandbox, whose user must be able to read it.
  await chmod(dir, 0o755);
  return dir;
}

async function scriptTask(reward: Record<string, unknown>, timeout_s = 60): Promise<Task> {
  return TaskSchema.parse({
    instance_id: 'harbor-calc-1',
    repo: 'fixture/calc',
    problem_statement: 'add() subtracts',
    workspace: { kind: 'dir', path: workspace },
    reward: { kind: 'script', ...reward },
    timeouts: { test_s: timeout_s },
  });
}

beforeAll(async () => {
  const rootDir = await tempDir('script-reward-root');
  dirs.push(rootDir);
  provider = new BubblewrapProvider({ rootDir });
  workspace = await tempDir('script-task');
  dirs.push(workspace);
  await writeTree(workspace, PY_FILES);
});

afterAll(async () => {
  expect(await provider.list({ role: 'reward' })).toEqual([]);
  await removeDirs(dirs);
});

describe('evaluateReward for script (Harbor) tasks', () => {
  it('gives 1 when tests/test.sh writes 1 for the fix, 0 without it', async () => {
    const task = await scriptTask({ dir: await verifier({ 'test.sh': TEST_SH }) });
    const fixed = await evaluateReward(
      { provider },
      { task, agentDiff: await agentDiff(provider, workspace, PY_FIX), idempotencyKey: key() },
    );
    expect(fixed).toMatchObject({
      reward: 1,
      resolved: true,
      reason: 'resolved',
      tests: {},
      canaries: 0,
    });
    const unfixed = await evaluateReward(
      { provider },
      { task, agentDiff: '', idempotencyKey: key() },
    );
    expect(unfixed).toMatchObject({ reward: 0, resolved: false, reason: 'unresolved' });
    expect(unfixed.detail).toContain('verifier exited with status 0');
  });

  it("keeps a partial reward from Harbor's reward.json", async () => {
    const dir = await verifier({
      'test.sh':
        'mkdir -p /logs/verifier\necho \'{"reward": 0.25, "steps": 3}\' > /logs/verifier/reward.json\n',
    });
    const r = await evaluateReward(
      { provider },
      { task: await scriptTask({ dir }), agentDiff: '', idempotencyKey: key() },
    );
    expect(r).toMatchObject({ reward: 0.25, resolved: false, reason: 'unresolved' });
  });

  it('runs a custom command with a reward file under /tmp; the verifier folder is read-only', async () => {
    const dir = await verifier({
      'check.sh': 'touch /tests/written 2>/dev/null && echo 0.5 > "$1" || echo 0.75 > "$1"\n',
    });
    const r = await evaluateReward(
      { provider },
      {
        task: await scriptTask({
          dir,
          command: 'sh /tests/check.sh /tmp/out/score',
          reward_file: '/tmp/out/score',
        }),
        agentDiff: '',
        idempotencyKey: key(),
      },
    );
    expect(r).toMatchObject({ reward: 0, reason: 'no_report' });
    const made = await evaluateReward(
      { provider },
      {
        task: await scriptTask({
          dir,
          command: 'mkdir -p /tmp/out && sh /tests/check.sh /tmp/out/score',
          reward_file: '/tmp/out/score',
        }),
        agentDiff: '',
        idempotencyKey: key(),
      },
    );
    expect(made).toMatchObject({ reward: 0.75, reason: 'unresolved' });
  });

  it('reports no_report for a missing or malformed reward, timeout for a slow verifier', async () => {
    const none = await evaluateReward(
      { provider },
      {
        task: await scriptTask({ dir: await verifier({ 'test.sh': 'echo checked\n' }) }),
        agentDiff: '',
        idempotencyKey: key(),
      },
    );
    expect(none).toMatchObject({ reward: 0, reason: 'no_report' });
    expect(none.detail).toContain('wrote no /logs/verifier/reward.txt');
    const bad = await evaluateReward(
      { provider },
      {
        task: await scriptTask({
          dir: await verifier({ 'test.sh': 'echo 7 > /logs/verifier/reward.txt\n' }),
        }),
        agentDiff: '',
        idempotencyKey: key(),
      },
    );
    expect(bad).toMatchObject({ reward: 0, reason: 'no_report' });
    expect(bad.detail).toContain('not a number in [0, 1]');
    const slow = await evaluateReward(
      { provider },
      {
        task: await scriptTask({ dir: await verifier({ 'test.sh': 'sleep 600\n' }) }, 1),
        agentDiff: '',
        idempotencyKey: key(),
      },
    );
    expect(slow).toMatchObject({ reward: 0, reason: 'timeout' });
  });

  it('reports an agent diff that does not apply as patch_failed', async () => {
    const bad =
      'diff --git a/calc/__init__.py b/calc/__init__.py\n--- a/calc/__init__.py\n+++ b/calc/__init__.py\n@@ -1 +1 @@\n-not there\n+x\n';
    const r = await evaluateReward(
      { provider },
      {
        task: await scriptTask({ dir: await verifier({ 'test.sh': TEST_SH }) }),
        agentDiff: bad,
        idempotencyKey: key(),
      },
    );
    expect(r).toMatchObject({ reward: 0, reason: 'patch_failed' });
  });
});

describe('parseRewardFile', () => {
  it.each([
    ['/logs/verifier/reward.txt', '1\n', 1],
    ['/logs/verifier/reward.txt', ' 0.5 ', 0.5],
    ['/logs/verifier/reward.txt', '0', 0],
    ['/logs/verifier/reward.json', '{"reward": 0.3, "extra": 1}', 0.3],
  ] as const)('%s %j → %s', (path, text, value) => {
    expect(parseRewardFile(path, text)).toBe(value);
  });

  it.each([
    ['/logs/verifier/reward.txt', '1.5'],
    ['/logs/verifier/reward.txt', '-0.1'],
    ['/logs/verifier/reward.txt', 'NaN'],
    ['/logs/verifier/reward.txt', ''],
    ['/logs/verifier/reward.txt', '0x1'],
    ['/logs/verifier/reward.json', '{"score": 1}'],
    ['/logs/verifier/reward.json', 'not json'],
  ] as const)('%s %j is no reward', (path, text) => {
    expect(typeof parseRewardFile(path, text)).toBe('string');
  });
});
