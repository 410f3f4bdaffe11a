import { describe, expect, it } from 'vitest';
import {
  isTestPath,
  splitDiff,
  stripTestChanges,
  unquoteGitPath,
} from '../../tasks/reward/diff.js';

const SRC = `diff --git a/src/calc.py b/src/calc.py
index 1111111..2222222 100644
--- a/src/calc.py
+++ b/src/calc.py
@@ -1,4 +1,3 @@
 def add(a, b):
-    return a - b
+    return a + b
 
-- not a header, a removed line starting with "- "
`;

// A hunk whose lines look like headers: they are content and must stay in this section.
const TRICKY = `diff --git a/docs/notes.md b/docs/notes.md
index 3333333..4444444 100644
--- a/docs/notes.md
+++ b/docs/notes.md
@@ -1,3 +1,2 @@
--- a/tests/test_x.py
-+++ b/tests/test_x.py
+diff --git a/tests/test_y.py b/tests/test_y.py
 end
\\ No newline at end of file
`;

const TEST = `diff --git a/tests/test_calc.py b/tests/test_calc.py
index 5555555..6666666 100644
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -1 +1 @@
-assert add(1, 2) == 3
+assert True
`;

const NEW_CONFTEST = `diff --git a/conftest.py b/conftest.py
new file mode 100644
index 0000000..7777777
--- /dev/null
+++ b/conftest.py
@@ -0,0 +1 @@
+import os
`;

const DELETED_TEST = `diff --git a/pkg/test/helper.js b/pkg/test/helper.js
deleted file mode 100644
index 8888888..0000000
--- a/pkg/test/helper.js
+++ /dev/null
@@ -1 +0,0 @@
-export const x = 1;
`;

const BINARY = `diff --git a/assets/logo.png b/assets/logo.png
new file mode 100644
index 0000000000000000000000000000000000000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391
GIT binary patch
literal 3
KcmZQzWMT#Y01p5E

literal 0
HcmV?d00001

`;

const MODE_ONLY_TEST = `diff --git a/run_test.py b/run_test.py
old mode 100644
new mode 100755
`;

const RENAME_INTO_TESTS = `diff --git a/src/util.py b/tests/util.py
similarity index 100%
rename from src/util.py
rename to tests/util.py
`;

const QUOTED = `diff --git "a/src/caf\\303\\251 test.py" "b/src/caf\\303\\251 test.py"
index 1111111..2222222 100644
--- "a/src/caf\\303\\251 test.py"
+++ "b/src/caf\\303\\251 test.py"
@@ -1 +1 @@
-x = 1
+x = 2
`;

const SPACES = `diff --git a/my dir/test_a b.py b/my dir/test_a b.py
index 1111111..2222222 100644
Binary files a/my dir/test_a b.py and b/my dir/test_a b.py differ
`;

const ALL = [
  SRC,
  TRICKY,
  TEST,
  NEW_CONFTEST,
  DELETED_TEST,
  BINARY,
  MODE_ONLY_TEST,
  RENAME_INTO_TESTS,
  QUOTED,
  SPACES,
];

describe('splitDiff', () => {
  it('splits into one section per file and joins back to the input', () => {
    const diff = ALL.join('');
    const sections = splitDiff(diff);
    expect(sections.map((s) => s.text)).toEqual(ALL);
    expect(sections.map((s) => s.paths)).toEqual([
      ['src/calc.py'],
      ['docs/notes.md'],
      ['tests/test_calc.py'],
      ['conftest.py'],
      ['pkg/test/helper.js'],
      ['assets/logo.png'],
      ['run_test.py'],
      ['src/util.py', 'tests/util.py'],
      ['src/café test.py'],
      ['my dir/test_a b.py'],
    ]);
  });

  it('keeps a preamble and reads plain unified diffs', () => {
    const plain = `--- calc.py\t2024-01-01 00:00:00\n+++ calc.py\t2024-01-02 00:00:00\n@@ -1 +1 @@\n-a\n+b\n`;
    const tests = `--- tests/t.py\n+++ tests/t.py\n@@ -1 +1 @@\n-a\n+b\n`;
    const sections = splitDiff(`From: agent\nSubject: fix\n\n${plain}${tests}`);
    expect(sections.map((s) => s.paths)).toEqual([[], ['calc.py'], ['tests/t.py']]);
    expect(sections[0]!.text).toBe('From: agent\nSubject: fix\n\n');
  });

  it('handles an empty diff and a diff without a final newline', () => {
    expect(splitDiff('')).toEqual([]);
    const noNewline = SRC.slice(0, -1);
    expect(splitDiff(noNewline).map((s) => s.text)).toEqual([noNewline]);
  });
});

describe('isTestPath', () => {
  it.each([
    'tests/test_calc.py',
    'test/csv.test.js',
    'pkg/tests/helpers.py',
    'src/test/x.js',
    'tests',
    'test_calc.py',
    'pkg/calc_test.py',
    'src/a.test.js',
    'src/a.test.mjs',
    'src/a.test.cjs',
    'src/a.test.ts',
    'src/a.spec.ts',
    'conftest.py',
    'sub/conftest.py',
    'pytest.ini',
    'setup.cfg',
    'tox.ini',
    '.mocharc.json',
    '.mocharc.yml',
    'vitest.config.ts',
    'jest.config.js',
    'testing/x.py',
    'src/__tests__/a.js',
    'src/a-test.js',
    'src/a_test.mjs',
    'test.js',
    'test-utils.cjs',
    '.pytest.ini',
    'pytest.toml',
    'pyproject.toml',
    'sub/pyproject.toml',
    '.coveragerc',
    'package.json',
    'packages/a/package.json',
    'vite.config.mjs',
    'vitest.workspace.ts',
    'vitest.setup.ts',
    'jest.setup.js',
    'src/setupTests.js',
    'babel.config.js',
    '.babelrc',
    'tsconfig.json',
    'tsconfig.build.json',
    'sitecustomize.py',
    'lib/usercustomize.py',
    'evil.pth',
    'calc/__pycache__/x.cpython-311.pyc',
    'calc/x.pyc',
    '.pytest_cache/v/cache/lastfailed',
    'node_modules/vitest/index.js',
    'packages/a/node_modules/x.js',
    'pytest.py',
    '_pytest/runner.py',
    'pluggy/__init__.py',
    'unittest/__init__.py',
    'vitest.mjs',
    '.gitattributes',
    '.gitmodules',
  ])('%s is a test path', (path) => {
    expect(isTestPath(path)).toBe(true);
  });

  it.each([
    'src/calc.py',
    'src/contest.py',
    'latest/x.js',
    'src/test_utils.js',
    'README.md',
    'calc/pytest.py',
    'src/unittest_helpers.py',
    'src/attest.js',
    'packages.json',
  ])('%s is not a test path', (path) => {
    expect(isTestPath(path)).toBe(false);
  });
});

describe('stripTestChanges', () => {
  it('drops every section touching a test path and keeps the rest verbatim', () => {
    const { diff, dropped } = stripTestChanges(ALL.join(''));
    expect(diff).toBe(SRC + TRICKY + BINARY + QUOTED);
    expect(dropped).toEqual([
      'tests/test_calc.py',
      'conftest.py',
      'pkg/test/helper.js',
      'run_test.py',
      'src/util.py',
      'tests/util.py',
      'my dir/test_a b.py',
    ]);
  });
});

describe('stripTestChanges with protected trees', () => {
  it('drops a section on or under a protected tree, and only those', () => {
    const section = (path: string): string =>
      `diff --git a/${path} b/${path}\nnew file mode 100644\n--- /dev/null\n+++ b/${path}\n@@ -0,0 +1 @@\n+x\n`;
    const diff = ['run_tests.sh', 'r2e_tests/helpers.py', 'r2e_tests_more/a.py', 'src/a.py'].map(section).join('');
    const { diff: kept, dropped } = stripTestChanges(diff, [], ['run_tests.sh', 'r2e_tests']);
    expect(dropped).toEqual(['run_tests.sh', 'r2e_tests/helpers.py']);
    expect(kept).toBe(section('r2e_tests_more/a.py') + section('src/a.py'));
  });
});

describe('unquoteGitPath', () => {
  it('decodes C-style quoting', () => {
    expect(unquoteGitPath('"a/tab\\there \\"q\\" back\\\\slash"')).toBe(
      'a/tab\there "q" back\\slash',
    );
    expect(unquoteGitPath('"caf\\303\\251"')).toBe('café');
    expect(unquoteGitPath('plain')).toBe('plain');
  });
});
