/**
 * The pytest, vitest, mocha and jest report readers, on reports the real runners write here:
 * pytest 7 from the system python3 (the one sandboxes run) and the JS runners from this package's
 * node_modules.
 */
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { JUnitParseError, parsePytestJUnit } from '../../tasks/reward/junit.js';
import {
  parseJestJson,
  parseMochaJson,
  parseVitestJson,
  ReportParseError,
} from '../../tasks/reward/report.js';
import { removeDirs, tempDir, writeTree } from '../sandbox/helpers.js';

const dirs: string[] = [];
afterAll(() => removeDirs(dirs));

/** Runs a command that may exit non-zero (failing tests) and returns nothing. */
function runAllowingFailure(file: string, args: string[], cwd: string): void {
  try {
    execFileSync(file, args, { cwd, stdio: 'pipe', env: { ...process.env, NODE_OPTIONS: '' } });
  } catch (err) {
    if (typeof (err as { status?: unknown }).status !== 'number') throw err;
  }
}

describe('parsePytestJUnit', () => {
  it('names tests by pytest node id, with statuses from a real pytest run', async () => {
    const dir = await tempDir('pytest-report');
    dirs.push(dir);
    await writeTree(dir, {
      'pkg/__init__.py': '',
      'pkg/tests/__init__.py': '',
      'pkg/tests/test_a.py': `import pytest


class TestA:
    def test_ok(self):
        assert True

    @pytest.mark.parametrize("v", [1, "a b", "x::y"])
    def test_param(self, v):
        assert v != 1

    class TestInner:
        def test_deep(self):
            assert True


def test_fail():
    assert 1 == 2


@pytest.mark.skip(reason="no")
def test_skip():
    pass


@pytest.fixture
def broken():
    raise RuntimeError("setup fails")


def test_setup_error(broken):
    pass


@pytest.mark.xfail(strict=True)
def test_xpass_strict():
    pass
`,
      'tests/test_b.py': 'def test_top():\n    assert True\n',
      'tests/test_broken.py': 'import does_not_exist\n\n\ndef test_hidden():\n    pass\n',
    });
    const report = join(dir, 'report.xml');
    runAllowingFailure(
      '/usr/bin/python3',
      [
        '-P',
        '-m',
        'pytest',
        '-p',
        'no:cacheprovider',
        '-o',
        'junit_family=xunit1',
        '--continue-on-collection-errors',
        `--junitxml=${report}`,
        '-q',
      ],
      dir,
    );
    const results = parsePytestJUnit(await readFile(report, 'utf8'));
    expect(results).toMatchObject({
      'pkg/tests/test_a.py::TestA::test_ok': 'passed',
      'pkg/tests/test_a.py::TestA::test_param[1]': 'failed',
      'pkg/tests/test_a.py::TestA::test_param[a b]': 'passed',
      'pkg/tests/test_a.py::TestA::test_param[x::y]': 'passed',
      'pkg/tests/test_a.py::TestA::TestInner::test_deep': 'passed',
      'pkg/tests/test_a.py::test_fail': 'failed',
      'pkg/tests/test_a.py::test_skip': 'skipped',
      'pkg/tests/test_a.py::test_setup_error': 'failed',
      'pkg/tests/test_a.py::test_xpass_strict': 'failed',
      'tests/test_b.py::test_top': 'passed',
    });
    // A module that fails to import hides its tests: they are missing, never passed.
    expect(results['tests/test_broken.py::test_hidden']).toBeUndefined();
    expect(Object.values(results).filter((s) => s === 'passed')).toHaveLength(5);
  });

  it('rejects what is not a JUnit document', () => {
    expect(() => parsePytestJUnit('{"tests": []}')).toThrow(JUnitParseError);
  });
});

describe('parseVitestJson', () => {
  it('joins describe names and the test name with " > ", from a real vitest run', async () => {
    const dir = await tempDir('vitest-report');
    dirs.push(dir);
    await writeTree(dir, {
      'package.json': '{ "type": "module" }\n',
      'test/a.test.js': `import { describe, expect, it, test } from 'vitest';
describe('outer', () => {
  describe('inner > deep', () => {
    it('passes', () => expect(1).toBe(1));
  });
  it('fails', () => expect(1).toBe(2));
  it.skip('is skipped', () => {});
  it.todo('is todo');
});
test('top level', () => {});
`,
      'test/broken.test.js':
        "import '../missing.js';\nimport { test } from 'vitest';\ntest('never runs', () => {});\n",
    });
    const report = join(dir, 'report.json');
    runAllowingFailure(
      process.execPath,
      [
        join(process.cwd(), 'node_modules/vitest/vitest.mjs'),
        'run',
        '--root',
        dir,
        '--reporter=json',
        `--outputFile=${report}`,
      ],
      dir,
    );
    const results = parseVitestJson(await readFile(report, 'utf8'));
    expect(results).toEqual({
      'outer > inner > deep > passes': 'passed',
      'outer > fails': 'failed',
      'outer > is skipped': 'skipped',
      'outer > is todo': 'skipped',
      'top level': 'passed',
    });
  });

  it('rejects a report that is not JSON or lacks test results', () => {
    expect(() => parseVitestJson('<xml/>')).toThrow(ReportParseError);
    expect(() => parseVitestJson('{"numTotalTests": 1}')).toThrow(/testResults/);
  });
});

describe('parseMochaJson', () => {
  it("names tests by mocha's full title, from a real mocha run", async () => {
    const dir = await tempDir('mocha-report');
    dirs.push(dir);
    await writeTree(dir, {
      'package.json': '{ "type": "module" }\n',
      'test/a.test.js': `import assert from 'node:assert/strict';
describe('outer', () => {
  describe('inner', () => {
    it('passes', () => assert.equal(1, 1));
  });
  it('fails', () => assert.equal(1, 2));
  it.skip('is skipped', () => {});
  it('is pending');
});
describe('hooked', () => {
  beforeEach(() => {
    throw new Error('setup broke');
  });
  it('never runs', () => {});
});
it('top level', () => {});
`,
      'test/b.test.cjs': `const assert = require('node:assert');
describe('outer', () => {
  it('fails', () => {});
});
it('async fail', async () => assert.ok(false));
`,
    });
    const report = join(dir, 'report.json');
    runAllowingFailure(
      process.execPath,
      [
        join(process.cwd(), 'node_modules/mocha/bin/mocha.js'),
        '--no-config',
        '--no-package',
        '--exit',
        '--reporter',
        'json',
        '--reporter-option',
        `output=${report}`,
        '--',
        'test/a.test.js',
        'test/b.test.cjs',
      ],
      dir,
    );
    const results = parseMochaJson(await readFile(report, 'utf8'));
    expect(results).toEqual({
      'outer inner passes': 'passed',
      // Failed in a.test.js, passed in b.test.cjs: one id, the worst status.
      'outer fails': 'failed',
      'outer is skipped': 'skipped',
      'outer is pending': 'skipped',
      // The hook's failure under its own title; the test it stopped is missing.
      'hooked "before each" hook for "never runs"': 'failed',
      'top level': 'passed',
      'async fail': 'failed',
    });
  });

  it('rejects a report that is not JSON or lacks the test lists', () => {
    expect(() => parseMochaJson('<xml/>')).toThrow(ReportParseError);
    expect(() => parseMochaJson('{"tests": [], "passes": []}')).toThrow(/failures/);
  });
});

describe('parseJestJson', () => {
  it('joins describe names and the test name with " > ", from a real jest run', async () => {
    const dir = await tempDir('jest-report');
    dirs.push(dir);
    await writeTree(dir, {
      'package.json': '{ "name": "x" }\n',
      'test/a.test.js': `describe('outer', () => {
  describe('inner > deep', () => {
    it('passes', () => expect(1).toBe(1));
  });
  it('fails', () => expect(1).toBe(2));
  it.skip('is skipped', () => {});
  it.todo('is todo');
});
test('top level', () => {});
`,
      'test/broken.test.js': "require('../missing.js');\ntest('never runs', () => {});\n",
    });
    const report = join(dir, 'report.json');
    const config = { rootDir: dir, cacheDirectory: join(dir, '.cache'), watchman: false };
    runAllowingFailure(
      process.execPath,
      [
        join(process.cwd(), 'node_modules/jest/bin/jest.js'),
        '--ci',
        '--no-watchman',
        '--config',
        JSON.stringify(config),
        '--json',
        `--outputFile=${report}`,
        '--runTestsByPath',
        'test/a.test.js',
        'test/broken.test.js',
      ],
      dir,
    );
    const results = parseJestJson(await readFile(report, 'utf8'));
    expect(results).toEqual({
      'outer > inner > deep > passes': 'passed',
      'outer > fails': 'failed',
      'outer > is skipped': 'skipped',
      'outer > is todo': 'skipped',
      'top level': 'passed',
    });
  });

  it('rejects a report that is not JSON or lacks test results', () => {
    expect(() => parseJestJson('<xml/>')).toThrow(ReportParseError);
    expect(() => parseJestJson('{"numTotalTests": 1}')).toThrow(/testResults/);
  });
});
