import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BubblewrapProvider } from '../../sandbox/bubblewrap.js';
import { evaluateReward } from '../../tasks/reward/index.js';
import type { Task } from '../../tasks/schema.js';
import { removeDirs, tempDir } from '../sandbox/helpers.js';
import {
  agentDiff,
  JS_FAKE_TESTS,
  JS_FIX,
  nodeTask,
  PY_FAKE_TESTS,
  PY_FIX,
  pythonTask,
} from './fixtures.js';

const dirs: string[] = [];
let provider: BubblewrapProvider;
let episode = 0;
const key = (): string => `episode-${process.pid}-${episode++}`;

beforeAll(async () => {
  const rootDir = await tempDir('reward-root');
  dirs.push(rootDir);
  provider = new BubblewrapProvider({ rootDir });
});

afterAll(async () => {
  // Every reward sandbox was destroyed by the reward itself.
  expect(await provider.list({ role: 'reward' })).toEqual([]);
  await removeDirs(dirs);
});

const frameworks: [
  string,
  () => Promise<{ task: Task; dir: string }>,
  Record<string, string>,
  Record<string, string>,
][] = [
  ['unittest', pythonTask, PY_FIX, PY_FAKE_TESTS],
  ['node-test', nodeTask, JS_FIX, JS_FAKE_TESTS],
];

describe.each(frameworks)('evaluateReward with %s', (_name, makeTask, fix, fakeTests) => {
  let task: Task;
  let workspace: string;

  beforeAll(async () => {
    ({ task, dir: workspace } = await makeTask());
    dirs.push(workspace);
  });

  it('gives 1 for a fix', async () => {
    const diff = await agentDiff(provider, workspace, fix);
    const r = await evaluateReward({ provider }, { task, agentDiff: diff, idempotencyKey: key() });
    expect(r).toMatchObject({
      reward: 1,
      resolved: true,
      reason: 'resolved',
      passed: 3,
      failed: 0,
    });
    expect(Object.values(r.tests)).toEqual(['passed', 'passed', 'passed']);
    expect(r.detail).toBeUndefined();
  });

  it('gives 0 without a fix: fail-to-pass tests fail, pass-to-pass tests pass', async () => {
    const r = await evaluateReward({ provider }, { task, agentDiff: '', idempotencyKey: key() });
    expect(r).toMatchObject({
      reward: 0,
      resolved: false,
      reason: 'unresolved',
      passed: 1,
      failed: 2,
    });
    for (const t of task.FAIL_TO_PASS) expect(r.tests[t]).toBe('failed');
    for (const t of task.PASS_TO_PASS) expect(r.tests[t]).toBe('passed');
  });

  it('ignores the agent rewriting tests and test configuration', async () => {
    const diff = await agentDiff(provider, workspace, fakeTests);
    expect(diff).toContain(Object.keys(fakeTests)[0]);
    const r = await evaluateReward({ provider }, { task, agentDiff: diff, idempotencyKey: key() });
    expect(r).toMatchObject({ reward: 0, reason: 'unresolved' });
    for (const t of task.FAIL_TO_PASS) expect(r.tests[t]).toBe('failed');
  });

  it('still gives 1 for a fix that comes with test edits', async () => {
    const diff = await agentDiff(provider, workspace, { ...fix, ...fakeTests });
    const r = await evaluateReward({ provider }, { task, agentDiff: diff, idempotencyKey: key() });
    expect(r).toMatchObject({ reward: 1, reason: 'resolved' });
  });

  it('reports a diff that does not apply as patch_failed', async () => {
    const path = Object.keys(fix)[0]!;
    const bad = `diff --git a/${path} b/${path}\n--- a/${path}\n+++ b/${path}\n@@ -1,2 +1,2 @@\n-this line\n-is not there\n+replacement\n+lines\n`;
    const r = await evaluateReward({ provider }, { task, agentDiff: bad, idempotencyKey: key() });
    expect(r).toMatchObject({
      reward: 0,
      resolved: false,
      reason: 'patch_failed',
      passed: 0,
      failed: 3,
    });
    expect(Object.values(r.tests)).toEqual(['missing', 'missing', 'missing']);
    expect(r.detail).toContain('does not apply');
  });

  it('counts a named test absent from the report as missing', async () => {
    const withGhost = { ...task, PASS_TO_PASS: [...task.PASS_TO_PASS, 'no such test'] };
    const diff = await agentDiff(provider, workspace, fix);
    const r = await evaluateReward(
      { provider },
      { task: withGhost, agentDiff: diff, idempotencyKey: key() },
    );
    expect(r).toMatchObject({ reward: 0, reason: 'unresolved', passed: 3, failed: 1 });
    expect(r.tests['no such test']).toBe('missing');
  });

  it('starts over when a retried attempt finds its reward sandbox already used', async () => {
    const k = key();
    const diff = await agentDiff(provider, workspace, fix);
    // A first attempt that claimed the sandbox and applied the diff, then its worker died.
    const stale = await provider.create({ idempotencyKey: `${k}:reward`, workspaceDir: workspace });
    await provider.exec(stale.id, { shell: ': > .git/agent-rollout-reward-used' });
    await provider.exec(stale.id, ['git', 'apply', '-'], { stdin: diff });
    const r = await evaluateReward({ provider }, { task, agentDiff: diff, idempotencyKey: k });
    expect(r).toMatchObject({ reward: 1, reason: 'resolved' });
  });
});

describe('evaluateReward edge cases', () => {
  it('stops tests at the time limit and reports timeout', async () => {
    const { task, dir } = await nodeTask({ test_command: 'sleep 600', timeouts: { test_s: 1 } });
    dirs.push(dir);
    const r = await evaluateReward({ provider }, { task, agentDiff: '', idempotencyKey: key() });
    expect(r).toMatchObject({ reward: 0, reason: 'timeout' });
  });

  it('reports no_report when the test command writes none', async () => {
    const { task, dir } = await pythonTask({ test_command: 'echo tests ran but wrote nothing' });
    dirs.push(dir);
    const r = await evaluateReward({ provider }, { task, agentDiff: '', idempotencyKey: key() });
    expect(r).toMatchObject({ reward: 0, reason: 'no_report' });
    expect(r.detail).toContain('tests ran but wrote nothing');
  });

  it('runs setup commands and a custom test command that writes $REWARD_REPORT', async () => {
    const { task, dir } = await pythonTask({
      setup: ['echo set-up > .setup-ran'],
      test_command:
        'test -e .setup-ran && python3 /opt/agent-rollout/reward/unittest_json.py "$REWARD_REPORT"',
    });
    dirs.push(dir);
    const diff = await agentDiff(provider, dir, PY_FIX);
    const r = await evaluateReward({ provider }, { task, agentDiff: diff, idempotencyKey: key() });
    expect(r).toMatchObject({ reward: 1, reason: 'resolved' });
  });

  it('reports patch_failed when the hidden test patch collides with the agent diff', async () => {
    // The agent created the hidden test's path under a name that is not a test path.
    const { task, dir } = await pythonTask();
    dirs.push(dir);
    const collide = {
      ...task,
      test_patch: task.test_patch.replaceAll('tests/test_hidden.py', 'calc/extra.py'),
    };
    const diff = await agentDiff(provider, dir, { 'calc/extra.py': 'x = 1\n' });
    const r = await evaluateReward(
      { provider },
      { task: collide, agentDiff: diff, idempotencyKey: key() },
    );
    expect(r).toMatchObject({ reward: 0, reason: 'patch_failed' });
    expect(r.detail).toContain('test patch');
  });
});
