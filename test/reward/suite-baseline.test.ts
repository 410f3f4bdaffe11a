/**
 * The suite baseline (tasks/reward/suite-baseline.ts), for real: bubblewrap sandboxes and the
 * real runners. Each fixture repository has the hidden test file (FAIL_TO_PASS) and other test
 * files no list names: the one that tests mul(), and one whose "no marker" test fails once the
 * gold patch adds its marker file (a test the gold patch itself breaks, as a flaky one would).
 */
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BubblewrapProvider } from '../../sandbox/bubblewrap.js';
import type { SandboxProvider } from '../../sandbox/provider.js';
import { evaluateReward, type RewardDeps } from '../../tasks/reward/index.js';
import { brokenSuiteTests } from '../../tasks/reward/suite-baseline.js';
import type { Task } from '../../tasks/schema.js';
import { newFileDiff, removeDirs, tempDir, writeTree } from '../sandbox/helpers.js';
import {
  agentDiff,
  fixDiff,
  JEST_FIX,
  jestTask,
  JS_FIX,
  mochaTask,
  nodeTask,
  PY_FILES,
  PY_FIX,
  pytestTask,
  pythonTask,
  vitestTask,
} from './fixtures.js';

const dirs: string[] = [];
let provider: BubblewrapProvider;
let creates = 0;
/** The real provider, counting the sandboxes made through it. */
let counting: SandboxProvider;
let episode = 0;
const key = (): string => `suite-${process.pid}-${episode++}`;

beforeAll(async () => {
  const rootDir = await tempDir('suite-root');
  dirs.push(rootDir);
  provider = new BubblewrapProvider({ rootDir });
  counting = new Proxy(provider, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      const method = (value as (...args: unknown[]) => unknown).bind(target);
      if (prop !== 'create') return method;
      return (...args: unknown[]) => {
        creates++;
        return method(...args);
      };
    },
  });
});

afterAll(async () => {
  expect(await provider.list({ role: 'reward' })).toEqual([]);
  await provider.release();
  await removeDirs(dirs);
});

/** Sandboxes `evaluate` made: the reward's own, plus the baseline runs when it made them. */
async function counted<T>(evaluate: () => Promise<T>): Promise<{ result: T; made: number }> {
  const before = creates;
  const result = await evaluate();
  return { result, made: creates - before };
}

const PY_OTHER = {
  pytest: {
    'tests/test_other.py': `import os

from calc import mul


def test_mul_small():
    assert mul(2, 2) == 4


def test_mul_zero():
    assert mul(5, 0) == 0


def test_no_marker():
    assert not os.path.exists(os.path.join(os.path.dirname(__file__), "..", "calc", "gold_marker.py"))
`,
  },
  unittest: {
    'tests/test_other.py': `import os
import unittest

from calc import mul


class TestOther(unittest.TestCase):
    def test_mul_small(self):
        self.assertEqual(mul(2, 2), 4)

    def test_mul_zero(self):
        self.assertEqual(mul(5, 0), 0)

    def test_no_marker(self):
        self.assertFalse(os.path.exists(os.path.join(os.path.dirname(__file__), "..", "calc", "gold_marker.py")))
`,
  },
};

const PY_BROKEN = {
  'calc/__init__.py':
    'def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b + 1\n',
};

/** The other test file of a JS runner: `imports` bring test, assert and mul. */
const jsOther = (imports: string): Record<string, string> => ({
  'test/other.test.js': `${imports}
test('mul small', () => assert.equal(mul(2, 2), 4));
test('mul zero', () => assert.equal(mul(5, 0), 0));
test('no marker', () => assert.equal(existsSync(join(here, '..', 'src', 'gold-marker.js')), false));
`,
});

const ESM_OTHER_PRELUDE = `import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mul } from '../src/math.js';

const here = dirname(fileURLToPath(import.meta.url));`;

const JS_BROKEN = {
  'src/math.js':
    'export function add(a, b) {\n  return a + b;\n}\n\nexport function mul(a, b) {\n  return a * b + 1;\n}\n',
};

/** mocha and jest run only the hidden files by default; these commands run the whole suite. */
const MOCHA_SUITE =
  'node /node_modules/mocha/bin/mocha.js --no-config --no-package --exit --reporter json --reporter-option output="$REWARD_REPORT" \'test/**/*.test.js\'';
const JEST_SUITE = `node /node_modules/jest/bin/jest.js --ci --no-watchman --config '${JSON.stringify(
  {
    rootDir: '/workspace',
    cacheDirectory: '/tmp/jest-cache',
    watchman: false,
    testMatch: ['**/test/**/*.test.js'],
  },
)}' --json --outputFile="$REWARD_REPORT" --forceExit`;

interface Case {
  name: string;
  make: (overrides: Record<string, unknown>) => Promise<{ task: Task; dir: string }>;
  overrides: Record<string, unknown>;
  other: Record<string, string>;
  fix: Record<string, string>;
  marker: string;
  broken: Record<string, string>;
  /** The unlisted tests of mul(), which `broken` breaks. */
  mulTests: string[];
  markerTest: string;
}

const CASES: Case[] = [
  {
    name: 'pytest',
    make: pytestTask,
    overrides: { PASS_TO_PASS: [] },
    other: PY_OTHER.pytest,
    fix: PY_FIX,
    marker: 'calc/gold_marker.py',
    broken: PY_BROKEN,
    mulTests: [
      'tests/test_calc.py::TestCalc::test_mul',
      'tests/test_other.py::test_mul_small',
      'tests/test_other.py::test_mul_zero',
    ],
    markerTest: 'tests/test_other.py::test_no_marker',
  },
  {
    name: 'unittest',
    make: pythonTask,
    overrides: { PASS_TO_PASS: [] },
    other: PY_OTHER.unittest,
    fix: PY_FIX,
    marker: 'calc/gold_marker.py',
    broken: PY_BROKEN,
    mulTests: [
      'tests.test_calc.TestCalc.test_mul',
      'tests.test_other.TestOther.test_mul_small',
      'tests.test_other.TestOther.test_mul_zero',
    ],
    markerTest: 'tests.test_other.TestOther.test_no_marker',
  },
  {
    name: 'node-test',
    make: nodeTask,
    overrides: { PASS_TO_PASS: [] },
    other: jsOther(`import { test } from 'node:test';\n${ESM_OTHER_PRELUDE}`),
    fix: JS_FIX,
    marker: 'src/gold-marker.js',
    broken: JS_BROKEN,
    mulTests: ['math > multiplies', 'mul small', 'mul zero'],
    markerTest: 'no marker',
  },
  {
    name: 'vitest',
    make: vitestTask,
    overrides: { PASS_TO_PASS: [] },
    other: jsOther(`import { test } from 'vitest';\n${ESM_OTHER_PRELUDE}`),
    fix: JS_FIX,
    marker: 'src/gold-marker.js',
    broken: JS_BROKEN,
    mulTests: ['math > multiplies', 'mul small', 'mul zero'],
    markerTest: 'no marker',
  },
  {
    name: 'mocha (whole-suite command)',
    make: mochaTask,
    overrides: { PASS_TO_PASS: [], test_command: MOCHA_SUITE },
    other: jsOther(`const test = globalThis.it;\n${ESM_OTHER_PRELUDE}`),
    fix: JS_FIX,
    marker: 'src/gold-marker.js',
    broken: JS_BROKEN,
    mulTests: ['math multiplies', 'mul small', 'mul zero'],
    markerTest: 'no marker',
  },
  {
    name: 'jest (whole-suite command)',
    make: jestTask,
    overrides: { PASS_TO_PASS: [], test_command: JEST_SUITE },
    other: jsOther(
      "const assert = require('node:assert/strict');\nconst { existsSync } = require('node:fs');\nconst { join } = require('node:path');\nconst { mul } = require('../src/math.js');\nconst here = __dirname;",
    ),
    fix: JEST_FIX,
    marker: 'src/gold-marker.js',
    broken: {
      'src/math.js':
        'function add(a, b) {\n  return a + b;\n}\n\nfunction mul(a, b) {\n  return a * b + 1;\n}\n\nmodule.exports = { add, mul };\n',
    },
    mulTests: ['math > multiplies', 'mul small', 'mul zero'],
    markerTest: 'no marker',
  },
];

/** The case's task with its other test files written in; its gold patch adds the marker too. */
async function caseTask(
  c: Case,
  overrides: Record<string, unknown> = {},
): Promise<{ task: Task; dir: string }> {
  const { task, dir } = await c.make({ ...c.overrides, ...overrides });
  dirs.push(dir);
  await writeTree(dir, c.other);
  const patch =
    'patch' in overrides ? task.patch : task.patch + newFileDiff(c.marker, 'MARKER = 1\n');
  return { task: { ...task, patch }, dir };
}

describe.each(CASES)('suite baseline with $name', (c) => {
  let task: Task;
  let dir: string;
  let cacheRoot: string;
  let deps: RewardDeps;

  beforeAll(async () => {
    ({ task, dir } = await caseTask(c));
    cacheRoot = await tempDir('suite-cache');
    dirs.push(cacheRoot);
    deps = { provider: counting, workspaceCacheDir: cacheRoot };
  });

  const baselineFiles = async (): Promise<string[]> =>
    readdir(join(cacheRoot, 'suite-baselines')).catch(() => []);

  it('gives 1 for the fix, checking the unlisted tests, and caches the baseline', async () => {
    const diff = await agentDiff(provider, dir, c.fix);
    const { result, made } = await counted(() =>
      evaluateReward(deps, { task, agentDiff: diff, idempotencyKey: key() }),
    );
    expect(result).toMatchObject({ reward: 1, reason: 'resolved', suiteBroken: [] });
    expect(result.suiteSkipped).toBeUndefined();
    // The mul() tests at least; the marker test is out, the gold patch fails it.
    expect(result.suiteTests).toBeGreaterThanOrEqual(c.mulTests.length);
    expect(made).toBe(3);
    const files = await baselineFiles();
    expect(files).toHaveLength(1);
    const cached = JSON.parse(
      await readFile(join(cacheRoot, 'suite-baselines', files[0]!), 'utf8'),
    ) as { tests: string[] };
    expect(cached.tests).toEqual(expect.arrayContaining(c.mulTests));
    expect(cached.tests).not.toContain(c.markerTest);
    for (const t of task.FAIL_TO_PASS) expect(cached.tests).not.toContain(t);
  });

  it('gives 0 unresolved for the fix plus a change that breaks only unlisted tests', async () => {
    const [file] = await baselineFiles();
    const written = (await stat(join(cacheRoot, 'suite-baselines', file!))).mtimeMs;
    const diff = await agentDiff(provider, dir, c.broken);
    const { result, made } = await counted(() =>
      evaluateReward(deps, { task, agentDiff: diff, idempotencyKey: key() }),
    );
    expect(result).toMatchObject({ reward: 0, resolved: false, reason: 'unresolved' });
    // Every listed test passes: only the suite baseline tells this from a fix.
    expect(Object.values(result.tests)).toEqual(task.FAIL_TO_PASS.map(() => 'passed'));
    expect([...(result.suiteBroken ?? [])].sort()).toEqual([...c.mulTests].sort());
    expect(result.detail).toContain(
      `${c.mulTests.length} of ${result.suiteTests} suite-baseline tests broke`,
    );
    // The cached baseline was used: no baseline sandboxes, the file not rewritten.
    expect(made).toBe(1);
    expect((await stat(join(cacheRoot, 'suite-baselines', file!))).mtimeMs).toBe(written);
  });

  it('leaves out a test the gold patch fails: the gold patch itself scores 1', async () => {
    const diff = await agentDiff(provider, dir, { ...c.fix, [c.marker]: 'MARKER = 1\n' });
    const { result, made } = await counted(() =>
      evaluateReward(deps, { task, agentDiff: diff, idempotencyKey: key() }),
    );
    expect(result).toMatchObject({ reward: 1, reason: 'resolved', suiteBroken: [] });
    expect(made).toBe(1);
  });
});

describe('suite baseline cache and edge cases', () => {
  const pytest = CASES[0]!;

  async function setup(overrides: Record<string, unknown> = {}): Promise<{
    task: Task;
    dir: string;
    deps: RewardDeps;
    cacheDir: string;
  }> {
    const { task, dir } = await caseTask(pytest, overrides);
    const cacheDir = await tempDir('suite-cache');
    dirs.push(cacheDir);
    return { task, dir, cacheDir, deps: { provider: counting, suiteBaselineDir: cacheDir } };
  }

  it('recomputes a corrupted or foreign cache file, never trusting it', async () => {
    const { task, dir, deps, cacheDir } = await setup();
    const broken = await agentDiff(provider, dir, pytest.broken);
    const first = await counted(() =>
      evaluateReward(deps, { task, agentDiff: broken, idempotencyKey: key() }),
    );
    expect(first).toMatchObject({ made: 3, result: { reward: 0, reason: 'unresolved' } });
    const [name] = await readdir(cacheDir);
    const file = join(cacheDir, name!);
    const good = await readFile(file, 'utf8');
    const record = JSON.parse(good) as Record<string, unknown>;
    for (const corrupt of [
      '{"format":1,"key":',
      JSON.stringify({ ...record, tests: [] }).replace(
        /"key":"[0-9a-f]+"/,
        `"key":"${'0'.repeat(64)}"`,
      ),
      JSON.stringify({ ...record, tests: 'everything passes' }),
    ]) {
      await writeFile(file, corrupt);
      const again = await counted(() =>
        evaluateReward(deps, { task, agentDiff: broken, idempotencyKey: key() }),
      );
      expect(again).toMatchObject({ made: 3, result: { reward: 0, reason: 'unresolved' } });
      expect(JSON.parse(await readFile(file, 'utf8'))).toEqual(JSON.parse(good));
    }
    expect(await readdir(cacheDir)).toEqual([name]);
  });

  it('shares one computation between concurrent evaluations of a task', async () => {
    const { task, dir, deps } = await setup();
    const diff = await agentDiff(provider, dir, pytest.fix);
    const { result, made } = await counted(() =>
      Promise.all(
        [0, 1, 2].map(() => evaluateReward(deps, { task, agentDiff: diff, idempotencyKey: key() })),
      ),
    );
    expect(result.map((r) => r.reward)).toEqual([1, 1, 1]);
    expect(made).toBe(3 + 2);
  });

  it('uses the base run alone, less FAIL_TO_PASS, when the task has no gold patch', async () => {
    const made = await setup();
    const task = { ...made.task, patch: '' };
    const diff = await agentDiff(provider, made.dir, pytest.fix);
    const fixed = await counted(() =>
      evaluateReward(made.deps, { task, agentDiff: diff, idempotencyKey: key() }),
    );
    expect(fixed).toMatchObject({ made: 2, result: { reward: 1, reason: 'resolved' } });
    // Without a gold run the marker test stays in: the base run passed it.
    const marked = await agentDiff(provider, made.dir, {
      ...pytest.fix,
      [pytest.marker]: 'MARKER = 1\n',
    });
    const r = await evaluateReward(made.deps, { task, agentDiff: marked, idempotencyKey: key() });
    expect(r).toMatchObject({ reward: 0, reason: 'unresolved', suiteBroken: [pytest.markerTest] });
  });

  it('records a baseline run that timed out and scores on the listed tests alone', async () => {
    const hang = {
      'calc/__init__.py': `import time\ntime.sleep(600)\n${PY_FIX['calc/__init__.py']!}`,
    };
    const { task, dir, deps } = await setup({
      patch: fixDiff(PY_FILES, hang),
      timeouts: { test_s: 8 },
    });
    const diff = await agentDiff(provider, dir, pytest.broken);
    const r = await evaluateReward(deps, { task, agentDiff: diff, idempotencyKey: key() });
    expect(r).toMatchObject({
      reward: 1,
      reason: 'resolved',
      suiteTests: 0,
      suiteBroken: [],
      suiteSkipped: 'gold run: timeout',
    });
  });

  it('is off with suiteBaseline: false: no baseline runs, and the result says so', async () => {
    const { task, dir, deps, cacheDir } = await setup();
    const diff = await agentDiff(provider, dir, pytest.broken);
    const { result, made } = await counted(() =>
      evaluateReward(
        { ...deps, suiteBaseline: false },
        { task, agentDiff: diff, idempotencyKey: key() },
      ),
    );
    expect(result).toMatchObject({ reward: 1, suiteTests: 0, suiteSkipped: 'off' });
    expect(made).toBe(1);
    expect(await readdir(cacheDir)).toEqual([]);
  });
});

describe('brokenSuiteTests', () => {
  it('checks the baseline tests no list names; failed, skipped and missing ones broke', () => {
    const baseline = { tests: ['a', 'b', 'c', 'd', 'listed'] };
    expect(
      brokenSuiteTests(baseline, new Set(['listed']), { a: 'passed', b: 'failed', c: 'skipped' }),
    ).toEqual({ checked: 4, broken: ['b', 'c', 'd'] });
  });
});
