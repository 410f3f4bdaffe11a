import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTestLog } from '../../../tasks/reward/log-parsers/index.js';
import { removeDirs, tempDir, writeTree } from '../../sandbox/helpers.js';
import { consoleOf } from './run.js';

const PYTEST_FILE = `import pytest


@pytest.fixture
def broken():
    raise RuntimeError("fixture")


@pytest.mark.parametrize("x", [1, 2, "a b", "c - d"])
def test_param(x):
    assert x != 2


def test_ok():
    pass


def test_error(broken):
    pass


@pytest.mark.skip(reason="not now")
def test_skip():
    pass


@pytest.mark.xfail
def test_xfail():
    assert False


@pytest.mark.xfail
def test_xpass():
    pass


class TestOuter:
    def test_fails(self):
        assert 1 == 2

    class TestInner:
        @pytest.mark.parametrize("n", [0, 1])
        def test_deep(self, n):
            assert n == 0
`;

const UNITTEST_FILE = `import sys
import unittest


class TestU(unittest.TestCase):
    def test_ok(self):
        """A docstring's first line."""
        self.assertEqual(1, 1)

    def test_fail(self):
        self.assertEqual(1, 2)

    def test_error(self):
        raise RuntimeError("boom")

    @unittest.skip("not now")
    def test_skip(self):
        pass

    @unittest.expectedFailure
    def test_expected(self):
        self.assertEqual(1, 2)

    @unittest.expectedFailure
    def test_unexpected(self):
        pass

    def test_noisy(self):
        sys.stderr.write("noise on stderr\\n")
        sys.stderr.flush()

    def test_sub(self):
        for i in range(2):
            with self.subTest(i=i):
                self.assertEqual(i, 0)
`;

const dirs: string[] = [];
let root: string;

beforeAll(async () => {
  root = await tempDir('log-python');
  dirs.push(root);
  await writeTree(root, {
    'tests/__init__.py': '',
    'tests/test_p.py': PYTEST_FILE,
    'tests/test_u.py': UNITTEST_FILE,
  });
});

afterAll(() => removeDirs(dirs));

const pytest = (args: string): string =>
  consoleOf(root, `python3 -m pytest -p no:cacheprovider ${args} tests/test_p.py`);

const PYTEST_EXPECTED = {
  'tests/test_p.py::test_param[1]': 'passed',
  'tests/test_p.py::test_param[2]': 'failed',
  'tests/test_p.py::test_param[a b]': 'passed',
  'tests/test_p.py::test_param[c - d]': 'passed',
  'tests/test_p.py::test_ok': 'passed',
  'tests/test_p.py::test_error': 'failed',
  'tests/test_p.py::test_xfail': 'passed',
  'tests/test_p.py::test_xpass': 'failed',
  'tests/test_p.py::TestOuter::test_fails': 'failed',
  'tests/test_p.py::TestOuter::TestInner::test_deep[0]': 'passed',
  'tests/test_p.py::TestOuter::TestInner::test_deep[1]': 'failed',
};

describe('pytest log parser on real pytest output', () => {
  it('reads the -rA short summary; skips there name no test', () => {
    const log = pytest('-rA');
    expect(log).toContain('short test summary info');
    expect(parseTestLog('pytest', log)).toEqual(PYTEST_EXPECTED);
  });

  it('reads the -v lines, skipped tests included', () => {
    const log = pytest('-v');
    expect(log).toContain('PASSED');
    expect(parseTestLog('pytest', log)).toEqual({
      ...PYTEST_EXPECTED,
      'tests/test_p.py::test_skip': 'skipped',
    });
  });

  it('reads colour output as plain', () => {
    const log = pytest('-rA --color=yes');
    expect(log).toContain('\x1b[');
    expect(parseTestLog('pytest', log)).toEqual(PYTEST_EXPECTED);
  });
});

describe('unittest log parser on real unittest -v output', () => {
  it('reads every test under both id forms, docstrings and stray output included', () => {
    const log = consoleOf(root, 'python3 -m unittest -v tests.test_u');
    expect(log).toContain("A docstring's first line. ... ok");
    expect(log).toContain('noise on stderr');
    const statuses: Record<string, string> = {
      test_ok: 'passed',
      test_fail: 'failed',
      test_error: 'failed',
      test_skip: 'skipped',
      test_expected: 'passed',
      test_unexpected: 'failed',
      test_noisy: 'passed',
      test_sub: 'failed',
    };
    const expected: Record<string, string> = {};
    for (const [name, status] of Object.entries(statuses)) {
      expected[`${name} (tests.test_u.TestU)`] = status;
      expected[`${name} (tests.test_u.TestU.${name})`] = status;
    }
    expect(parseTestLog('unittest', log)).toEqual(expected);
  });
});
