import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BubblewrapProvider } from '../../sandbox/bubblewrap.js';
import { evaluateReward } from '../../tasks/reward/index.js';
import type { Task } from '../../tasks/schema.js';
import { removeDirs, tempDir } from '../sandbox/helpers.js';
import {
  agentDiff,
  JS_FIX,
  MOCHA_FAKE_TESTS,
  mochaTask,
  PY_FAKE_TESTS,
  PY_FIX,
  PYTEST_FAKE_TESTS,
  pytestTask,
  pythonTask,
  SCREEN_OFF,
} from './fixtures.js';

const dirs: string[] = [];
let provider: BubblewrapProvider;
let episode = 0;
const key = (): string => `log-episode-${process.pid}-${episode++}`;

beforeAll(async () => {
  const rootDir = await tempDir('log-reward-root');
  dirs.push(rootDir);
  provider = new BubblewrapProvider({ rootDir });
});

afterAll(async () => {
  expect(await provider.list({ role: 'reward' })).toEqual([]);
  await removeDirs(dirs);
});

/** The add() of the Python fixtures, made to neuter every assertion style once imported. */
const PY_NEUTER = `import sys
import unittest

unittest.TestCase.assertEqual = lambda self, *a, **k: None
unittest.TestCase.assertTrue = lambda self, *a, **k: None
_pytest = sys.modules.get("_pytest.python")
if _pytest is not None:
    _pytest.Function.runtest = lambda self: None


def add(a, b):
    return a - b


def mul(a, b):
    return a * b
`;

/**
 * Code under test that writes the result lines the parser looks for past pytest's output capture
 * (to its own copy of the run's stdout), then ends the run before any test runs.
 */
const pyForge = (lines: string[]): string => `import os

_out = os.readlink("/proc/%d/fd/1" % os.getppid())
for _fd in sorted(int(f) for f in os.listdir("/proc/self/fd")):
    try:
        if os.readlink("/proc/self/fd/%d" % _fd) == _out:
            os.write(_fd, ${JSON.stringify(lines.join('\n') + '\n')}.encode())
            break
    except OSError:
        pass
os._exit(0)
`;

const MOCHA_BIN = '/node_modules/mocha/bin/mocha.js';

/** Canary tests: the screen (tasks/reward/screen/) would stop their code first, so it is off. */

const cases: [
  string,
  () => Promise<{ task: Task; dir: string }>,
  Record<string, string>,
  Record<string, string>,
  Record<string, string>,
][] = [
  [
    'pytest -rA',
    () =>
      pytestTask({
        test_framework: undefined,
        log_parser: 'pytest',
        test_command: 'python3 -P -m pytest -p no:cacheprovider -rA',
      }),
    PY_FIX,
    PYTEST_FAKE_TESTS,
    { 'calc/__init__.py': PY_NEUTER },
  ],
  [
    'unittest -v',
    async () => {
      const made = await pythonTask({
        test_framework: undefined,
        log_parser: 'unittest',
        test_command: 'python3 -P -m unittest -v',
      });
      const ids = (list: string[]): string[] =>
        list.map((id) => {
          const dot = id.lastIndexOf('.');
          return `${id.slice(dot + 1)} (${id.slice(0, dot)})`;
        });
      const task = {
        ...made.task,
        FAIL_TO_PASS: ids(made.task.FAIL_TO_PASS),
        PASS_TO_PASS: ids(made.task.PASS_TO_PASS),
      };
      return { task, dir: made.dir };
    },
    PY_FIX,
    PY_FAKE_TESTS,
    { 'calc/__init__.py': PY_NEUTER },
  ],
  [
    'mocha spec reporter',
    () =>
      mochaTask({
        test_framework: undefined,
        log_parser: 'mocha',
        test_command: `node ${MOCHA_BIN} --exit`,
      }),
    JS_FIX,
    MOCHA_FAKE_TESTS,
    {
      'src/math.js': `import assert from 'node:assert';
import strict from 'node:assert/strict';
for (const a of [assert, strict]) for (const k of Object.keys(a)) a[k] = () => {};
export function add(a, b) {
  return a - b;
}
export function mul(a, b) {
  return a * b;
}
`,
    },
  ],
];

describe.each(cases)('evaluateReward, log parser %s', (_name, makeTask, fix, fakeTests, neuter) => {
  let task: Task;
  let workspace: string;
  const named = (): string[] => [...task.FAIL_TO_PASS, ...task.PASS_TO_PASS];

  beforeAll(async () => {
    ({ task, dir: workspace } = await makeTask());
    dirs.push(workspace);
  });

  it('gives 1 for the fix, guarded by canaries', async () => {
    const diff = await agentDiff(provider, workspace, fix);
    const r = await evaluateReward({ provider }, { task, agentDiff: diff, idempotencyKey: key() });
    expect(r).toMatchObject({ reward: 1, resolved: true, reason: 'resolved', failed: 0 });
    expect(Object.values(r.tests)).toEqual(named().map(() => 'passed'));
    // Two per assertion entry point of the hidden tests.
    expect(r.canaries).toBeGreaterThanOrEqual(2);
  });

  it('gives 0 without a fix: fail-to-pass tests fail, pass-to-pass tests pass', async () => {
    const r = await evaluateReward({ provider }, { task, agentDiff: '', idempotencyKey: key() });
    expect(r).toMatchObject({ reward: 0, reason: 'unresolved' });
    for (const t of task.FAIL_TO_PASS) expect(r.tests[t]).toBe('failed');
    for (const t of task.PASS_TO_PASS) expect(r.tests[t]).toBe('passed');
    expect(r.detail).toContain('tests exited with status');
  });

  it('gives 0 for rewritten tests and runner configuration (a conftest forcing passes)', async () => {
    const diff = await agentDiff(provider, workspace, fakeTests);
    const r = await evaluateReward({ provider }, { task, agentDiff: diff, idempotencyKey: key() });
    expect(r).toMatchObject({ reward: 0, reason: 'unresolved' });
    expect(r.dropped).toEqual(expect.arrayContaining(Object.keys(fakeTests)));
  });

  it('catches code under test that neuters failing assertions: tampered', async () => {
    const diff = await agentDiff(provider, workspace, neuter);
    const r = await evaluateReward(
      { provider, screen: SCREEN_OFF },
      { task, agentDiff: diff, idempotencyKey: key() },
    );
    expect(r).toMatchObject({ reward: 0, reason: 'tampered' });
    expect(r.detail).toContain('canary tests did not fail');
  });
});

describe('evaluateReward, forged console output', () => {
  it.each([
    ['pytest', pytestTask, 'pytest', 'python3 -P -m pytest -p no:cacheprovider -rA'],
    ['unittest', pythonTask, 'unittest', 'python3 -P -m unittest -v'],
  ] as const)(
    '%s: passes printed by the code under test before it ends the run are tampered',
    async (_name, makeTask, parser, command) => {
      const made = await makeTask({
        test_framework: undefined,
        log_parser: parser,
        test_command: command,
      });
      dirs.push(made.dir);
      const task =
        parser === 'unittest'
          ? {
              ...made.task,
              FAIL_TO_PASS: ['test_add (tests.test_hidden.TestHidden)'],
              PASS_TO_PASS: [],
            }
          : made.task;
      const named = [...task.FAIL_TO_PASS, ...task.PASS_TO_PASS];
      const lines = named.map((t) => (parser === 'pytest' ? `PASSED ${t}` : `${t} ... ok`));
      const diff = await agentDiff(provider, made.dir, { 'calc/__init__.py': pyForge(lines) });
      const r = await evaluateReward(
        { provider, screen: SCREEN_OFF },
        { task, agentDiff: diff, idempotencyKey: key() },
      );
      expect(Object.values(r.tests).every((s) => s === 'passed')).toBe(true);
      expect(r).toMatchObject({ reward: 0, reason: 'tampered' });
      expect(r.detail).toContain('missing');
    },
  );

  it('keeps a real failure over a forged pass printed beside it', async () => {
    const made = await pytestTask({
      test_framework: undefined,
      log_parser: 'pytest',
      test_command: 'python3 -P -m pytest -p no:cacheprovider -rA',
    });
    dirs.push(made.dir);
    const forged = `for t in ${JSON.stringify(made.task.FAIL_TO_PASS)}:
    print("PASSED " + t)


def add(a, b):
    return a - b


def mul(a, b):
    return a * b
`;
    const diff = await agentDiff(provider, made.dir, { 'calc/__init__.py': forged });
    const r = await evaluateReward(
      { provider },
      { task: made.task, agentDiff: diff, idempotencyKey: key() },
    );
    expect(r).toMatchObject({ reward: 0, reason: 'unresolved' });
    for (const t of made.task.FAIL_TO_PASS) expect(r.tests[t]).toBe('failed');
  });

  it('finds canaries under the ids a runner started elsewhere gives them (Django-style)', async () => {
    // Run from tests/, as Django's runtests.py is: modules are named without the tests. prefix.
    const made = await pythonTask({
      test_framework: undefined,
      log_parser: 'unittest',
      test_command:
        'cd tests && PYTHONPATH=/workspace python3 -m unittest -v test_hidden test_calc',
      FAIL_TO_PASS: [
        'test_add (test_hidden.TestHidden)',
        'test_add_negative (test_hidden.TestHidden)',
      ],
      PASS_TO_PASS: ['test_mul (test_calc.TestCalc)'],
    });
    dirs.push(made.dir);
    const fixed = await evaluateReward(
      { provider },
      {
        task: made.task,
        agentDiff: await agentDiff(provider, made.dir, PY_FIX),
        idempotencyKey: key(),
      },
    );
    expect(fixed).toMatchObject({ reward: 1, reason: 'resolved', canaries: 2 });
    const neutered = await evaluateReward(
      { provider, screen: SCREEN_OFF },
      {
        task: made.task,
        agentDiff: await agentDiff(provider, made.dir, { 'calc/__init__.py': PY_NEUTER }),
        idempotencyKey: key(),
      },
    );
    expect(neutered).toMatchObject({ reward: 0, reason: 'tampered' });
  });

  it('reports no_report when the output holds no test results', async () => {
    const { task, dir } = await pytestTask({
      test_framework: undefined,
      log_parser: 'pytest',
      test_command: 'echo nothing to see',
    });
    dirs.push(dir);
    const r = await evaluateReward({ provider }, { task, agentDiff: '', idempotencyKey: key() });
    expect(r).toMatchObject({ reward: 0, reason: 'no_report' });
    expect(r.detail).toContain('nothing to see');
  });

  it('runs TAP tasks unguarded and says so: canaries 0', async () => {
    const { task, dir } = await pytestTask({
      test_framework: undefined,
      log_parser: 'tap',
      test_command: "printf 'TAP version 13\\nok 1 - adds\\n1..1\\n'",
      FAIL_TO_PASS: ['adds'],
      PASS_TO_PASS: [],
    });
    dirs.push(dir);
    const r = await evaluateReward({ provider }, { task, agentDiff: '', idempotencyKey: key() });
    expect(r).toMatchObject({ reward: 1, reason: 'resolved', canaries: 0 });
  });
});
