import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BubblewrapProvider } from '../../sandbox/bubblewrap.js';
import { evaluateReward } from '../../tasks/reward/index.js';
import type { Task } from '../../tasks/schema.js';
import { newFileDiff, removeDirs, tempDir, writeTree } from '../sandbox/helpers.js';
import {
  agentDiff,
  JS_FAKE_TESTS,
  JEST_FAKE_TESTS,
  JEST_FIX,
  jestTask,
  JS_FIX,
  MOCHA_FAKE_TESTS,
  mochaTask,
  nodeTask,
  PY_FAKE_TESTS,
  PY_FIX,
  PYTEST_FAKE_TESTS,
  pytestTask,
  pythonTask,
  VITEST_FAKE_TESTS,
  vitestTask,
  SCREEN_OFF,
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
  await provider.release();
  await removeDirs(dirs);
});

/**
 * Code under test that, once imported, makes every failing assertion of the task's runner pass:
 * what a canary must catch.
 */
function neuterAsserts(task: Task): Record<string, string> {
  if (task.test_framework === 'unittest' || task.test_framework === 'pytest') {
    return {
      'calc/__init__.py': `import unittest
import sys

unittest.TestCase.assertEqual = lambda self, *a, **k: None
unittest.TestCase.assertTrue = lambda self, *a, **k: None
_pytest = sys.modules.get("_pytest.python")
if _pytest is not None:
    _pytest.Function.runtest = lambda self: None


def add(a, b):
    return a - b


def mul(a, b):
    return a * b
`,
    };
  }
  if (task.test_framework === 'jest') {
    return {
      'src/math.js': `const assert = require('node:assert');
for (const k of Object.keys(assert)) assert[k] = () => {};
const pass = () => ({ pass: true, message: () => '' });
globalThis.expect.extend({ toBe: pass, toEqual: pass, toStrictEqual: pass, toBeTruthy: pass });
function add(a, b) {
  return a - b;
}
function mul(a, b) {
  return a * b;
}
module.exports = { add, mul };
`,
    };
  }
  return {
    'src/math.js': `import assert from 'node:assert';
import strict from 'node:assert/strict';
for (const a of [assert, strict]) for (const k of Object.keys(a)) a[k] = () => {};
if (globalThis.__vitest_worker__) {
  const { expect } = await import('vitest');
  expect.extend({ toBe: () => ({ pass: true, message: () => '' }), toEqual: () => ({ pass: true, message: () => '' }) });
}
export function add(a, b) {
  return a - b;
}
export function mul(a, b) {
  return a * b;
}
`,
  };
}

const named = (task: Task): string[] => [...task.FAIL_TO_PASS, ...task.PASS_TO_PASS];

/** Canary tests: the screen (tasks/reward/screen/) would stop their code first, so it is off. */

const frameworks: [
  string,
  () => Promise<{ task: Task; dir: string }>,
  Record<string, string>,
  Record<string, string>,
][] = [
  ['unittest', pythonTask, PY_FIX, PY_FAKE_TESTS],
  ['pytest', pytestTask, PY_FIX, PYTEST_FAKE_TESTS],
  ['node-test', nodeTask, JS_FIX, JS_FAKE_TESTS],
  ['vitest', vitestTask, JS_FIX, VITEST_FAKE_TESTS],
  ['mocha', mochaTask, JS_FIX, MOCHA_FAKE_TESTS],
  ['jest', jestTask, JEST_FIX, JEST_FAKE_TESTS],
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
      passed: named(task).length,
      failed: 0,
    });
    expect(Object.values(r.tests)).toEqual(named(task).map(() => 'passed'));
    expect(r.detail).toBeUndefined();
  });

  it('gives 0 without a fix: fail-to-pass tests fail, pass-to-pass tests pass', async () => {
    const r = await evaluateReward({ provider }, { task, agentDiff: '', idempotencyKey: key() });
    expect(r).toMatchObject({
      reward: 0,
      resolved: false,
      reason: 'unresolved',
      passed: task.PASS_TO_PASS.length,
      failed: task.FAIL_TO_PASS.length,
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
    expect(r.dropped).toEqual(expect.arrayContaining(Object.keys(fakeTests)));
  });

  it('gives 0 with reason tampered when the code under test makes failing asserts pass', async () => {
    const r = await evaluateReward(
      { provider, screen: SCREEN_OFF },
      {
        task,
        agentDiff: await agentDiff(provider, workspace, neuterAsserts(task)),
        idempotencyKey: key(),
      },
    );
    expect(r).toMatchObject({ reward: 0, resolved: false, reason: 'tampered' });
    expect(r.detail).toContain('canary tests did not fail');
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
      failed: named(task).length,
    });
    expect(Object.values(r.tests)).toEqual(named(task).map(() => 'missing'));
    expect(r.detail).toContain('does not apply');
  });

  it('counts a named test absent from the report as missing', async () => {
    const withGhost = { ...task, PASS_TO_PASS: [...task.PASS_TO_PASS, 'no such test'] };
    const diff = await agentDiff(provider, workspace, fix);
    const r = await evaluateReward(
      { provider },
      { task: withGhost, agentDiff: diff, idempotencyKey: key() },
    );
    expect(r).toMatchObject({
      reward: 0,
      reason: 'unresolved',
      passed: named(task).length,
      failed: 1,
    });
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

  it.each([
    [
      'mocha',
      mochaTask,
      {
        '.mocharc.cjs': "module.exports = { require: ['./src/neuter.cjs'] };\n",
        'src/neuter.cjs':
          "const assert = require('node:assert/strict');\nfor (const k of Object.keys(assert)) assert[k] = () => {};\n",
      },
    ],
    [
      'jest',
      jestTask,
      {
        'jest.config.js': "module.exports = { setupFilesAfterEnv: ['./src/neuter.js'] };\n",
        'src/neuter.js':
          "const pass = () => ({ pass: true, message: () => '' });\nexpect.extend({ toBe: pass, toEqual: pass });\n",
      },
    ],
  ] as const)(
    "runs %s with the repository's own configuration, whose neutered asserts the canaries catch",
    async (_name, makeTask, config) => {
      const { task, dir } = await makeTask();
      dirs.push(dir);
      // The base snapshot's configuration is trusted (the agent's changes to it are dropped).
      await writeTree(dir, config);
      const r = await evaluateReward({ provider }, { task, agentDiff: '', idempotencyKey: key() });
      expect(r).toMatchObject({ reward: 0, reason: 'tampered' });
      expect(r.detail).toContain('canary tests did not fail');
    },
  );

  it('runs canaries in a CommonJS test file and catches an assert shim there', async () => {
    const hidden = `const { test } = require('node:test');
const assert = require('node:assert');
test('adds', async () => {
  const { add } = await import('../src/math.js');
  assert.strictEqual(add(2, 3), 5);
});
`;
    const { task, dir } = await nodeTask({
      test_patch: newFileDiff('test/hidden.test.cjs', hidden),
      FAIL_TO_PASS: ['adds'],
      PASS_TO_PASS: ['math > multiplies'],
    });
    dirs.push(dir);
    const fixed = await evaluateReward(
      { provider },
      { task, agentDiff: await agentDiff(provider, dir, JS_FIX), idempotencyKey: key() },
    );
    expect(fixed).toMatchObject({ reward: 1, reason: 'resolved' });
    const shim = `import assert from 'node:assert';
assert.strictEqual = () => {};
export function add(a, b) {
  return a - b;
}
export function mul(a, b) {
  return a * b;
}
`;
    const hacked = await evaluateReward(
      { provider, screen: SCREEN_OFF },
      {
        task,
        agentDiff: await agentDiff(provider, dir, { 'src/math.js': shim }),
        idempotencyKey: key(),
      },
    );
    expect(hacked).toMatchObject({ reward: 0, reason: 'tampered', tests: { adds: 'passed' } });
  });

  it('calls a hidden test file that fails to import unresolved, not tampered', async () => {
    const { task, dir } = await pythonTask();
    dirs.push(dir);
    // An honest but wrong change: add() is renamed, so the hidden module cannot import it.
    const diff = await agentDiff(provider, dir, {
      'calc/__init__.py':
        'def plus(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n',
    });
    const r = await evaluateReward({ provider }, { task, agentDiff: diff, idempotencyKey: key() });
    expect(r).toMatchObject({ reward: 0, reason: 'unresolved' });
    for (const t of task.FAIL_TO_PASS) expect(r.tests[t]).toBe('missing');
    expect(r.detail).toContain('canary tests missing');
  });

  it('drops the agent changes to any path the test patch touches, test-like or not', async () => {
    const { task, dir } = await pythonTask();
    dirs.push(dir);
    const data = 'calc/fixture_data.py';
    const withData = {
      ...task,
      test_patch: task.test_patch + newFileDiff(data, 'EXPECTED = 5\n'),
    };
    const diff = await agentDiff(provider, dir, { ...PY_FIX, [data]: 'EXPECTED = -1\n' });
    const r = await evaluateReward(
      { provider },
      { task: withData, agentDiff: diff, idempotencyKey: key() },
    );
    expect(r).toMatchObject({ reward: 1, reason: 'resolved', dropped: [data] });
  });
});
