import { describe, expect, it } from 'vitest';
import { canaryTargets, makeCanary } from '../../tasks/reward/canary.js';
import { newFileDiff } from '../sandbox/helpers.js';

/** Deterministic bytes, so names and values can be checked. */
function counter(): (n: number) => Buffer {
  let next = 0;
  return (n) => Buffer.from(Array.from({ length: n }, () => next++ % 256));
}

const deleted = (path: string): string =>
  `diff --git a/${path} b/${path}\ndeleted file mode 100644\n--- a/${path}\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n`;

describe('canaryTargets', () => {
  it('picks the files of the test patch the runner runs, not deleted or other files', () => {
    const patch =
      newFileDiff('tests/test_a.py', 'x = 1\n') +
      newFileDiff('tests/data.py', 'x = 1\n') +
      deleted('tests/test_old.py') +
      newFileDiff('pkg/tests/test_b.py', 'x = 1\n');
    expect(canaryTargets('pytest', patch)).toEqual([
      { path: 'tests/test_a.py', created: false },
      { path: 'pkg/tests/test_b.py', created: false },
    ]);
    const js =
      newFileDiff('test/a.test.js', 'x\n') +
      newFileDiff('test/helpers.js', 'x\n') +
      newFileDiff('src/b.spec.ts', 'x\n');
    expect(canaryTargets('vitest', js).map((t) => t.path)).toEqual([
      'test/a.test.js',
      'src/b.spec.ts',
    ]);
    // node:test runs every file under test/.
    expect(canaryTargets('node-test', js).map((t) => t.path)).toEqual([
      'test/a.test.js',
      'test/helpers.js',
    ]);
    // mocha: JavaScript under test/ or named like a test; jest: its default testMatch.
    const more = js + newFileDiff('src/__tests__/c.tsx', 'x\n') + newFileDiff('lib/d.cjs', 'x\n');
    expect(canaryTargets('mocha', more).map((t) => t.path)).toEqual([
      'test/a.test.js',
      'test/helpers.js',
    ]);
    expect(canaryTargets('jest', more).map((t) => t.path)).toEqual([
      'test/a.test.js',
      'src/b.spec.ts',
      'src/__tests__/c.tsx',
    ]);
  });

  it('falls back to a new, discoverable file beside the first file of the patch', () => {
    const patch = newFileDiff('tests/fixtures.py', 'x = 1\n');
    const [target] = canaryTargets('unittest', patch, counter());
    expect(target).toEqual({
      path: expect.stringMatching(/^tests\/test_[a-z]{10}\.py$/),
      created: true,
    });
    const [js] = canaryTargets('node-test', newFileDiff('lib/data.json', '{}\n'), counter());
    expect(js?.path).toMatch(/^lib\/[a-z]{10}\.test\.mjs$/);
    const [mocha] = canaryTargets('mocha', newFileDiff('lib/data.json', '{}\n'), counter());
    expect(mocha?.path).toMatch(/^lib\/[a-z]{10}\.test\.mjs$/);
    // jest's default testMatch and its CommonJS loader: a .js file.
    const [jest] = canaryTargets('jest', newFileDiff('lib/data.json', '{}\n'), counter());
    expect(jest?.path).toMatch(/^lib\/[a-z]{10}\.test\.js$/);
  });
});

describe('makeCanary', () => {
  it('names unittest canaries by test id and pytest canaries by node id, of every test kind', () => {
    const unittest = makeCanary('unittest', 'tests/test_a.py', '', counter());
    expect(unittest.ids).toHaveLength(3);
    for (const id of unittest.ids)
      expect(id).toMatch(/^tests\.test_a\.Test[A-Z][a-z]{9}\.test_[a-z]{10}$/);
    const pytest = makeCanary('pytest', 'tests/test_a.py', '', counter());
    expect(pytest.ids).toHaveLength(5);
    expect(
      pytest.ids.slice(0, 3).every((id) => /^tests\/test_a\.py::Test\w+::test_\w+$/.test(id)),
    ).toBe(true);
    expect(pytest.ids[3]).toMatch(/^tests\/test_a\.py::test_[a-z]{10}$/);
    expect(pytest.text).toMatch(/\ndef test_[a-z]{10}\(\):\n/);
  });

  it('uses the module syntax of the file it is appended to', () => {
    const esm = makeCanary('node-test', 'test/a.test.js', "import x from 'y';\n", counter());
    expect(esm.text).toContain("from 'node:test'");
    const cjs = makeCanary('node-test', 'test/a.test.js', "const x = require('y');\n", counter());
    expect(cjs.text).toContain("require('node:test')");
    expect(cjs.text).not.toMatch(/^import /m);
    expect(makeCanary('node-test', 'test/a.test.cjs', 'export {}', counter()).text).toContain(
      'require(',
    );
  });

  it("registers mocha and jest canaries with the runner's globals, in the file's syntax", () => {
    const mocha = makeCanary('mocha', 'test/a.test.js', "import x from 'y';\n", counter());
    expect(mocha.text).toMatch(/^const test_\w+ = globalThis\.it;$/m);
    expect(mocha.text).toContain("from 'node:assert/strict'");
    expect(mocha.ids).toHaveLength(6);
    const jest = makeCanary('jest', 'test/a.test.js', "const x = require('y');\n", counter());
    expect(jest.text).toMatch(/^const test_\w+ = globalThis\.test;$/m);
    expect(jest.text).toContain("require('@jest/globals')");
    expect(jest.text).toMatch(/globalThis\.expect\(\d+\)\.toBe\(\d+\)/);
    expect(jest.text).not.toMatch(/^import /m);
    expect(makeCanary('jest', 'test/a.test.mjs', '', counter()).text).toContain(
      'import { expect as expect_',
    );
  });

  it('makes values that differ and names that differ between evaluations', () => {
    const a = makeCanary('vitest', 'test/a.test.js', '');
    const b = makeCanary('vitest', 'test/a.test.js', '');
    expect(a.ids).toHaveLength(6);
    expect(a.ids.filter((id) => b.ids.includes(id))).toEqual([]);
    const [, x, y] = /expect_\w+\((\d+)\)\.toBe\((\d+)\)/.exec(a.text) ?? [];
    expect(x).toMatch(/^\d+$/);
    expect(x).not.toBe(y);
  });
});
