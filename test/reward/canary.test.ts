import { execFileSync, spawnSync } from 'node:child_process';
import { readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { canaryTargets, makeCanary, type Canary } from '../../tasks/reward/canary.js';
import { canaryPlanOf } from '../../tasks/reward/canary-plan.js';
import { parseTestLog } from '../../tasks/reward/log-parsers/index.js';
import { parseReport } from '../../tasks/reward/report.js';
import type { TestFramework } from '../../tasks/schema.js';
import { newFileDiff, removeDirs, tempDir, writeTree } from '../sandbox/helpers.js';
import {
  JEST_F2P,
  JEST_FILE,
  MOCHA_F2P,
  MOCHA_FILE,
  PYTEST_F2P,
  PYTEST_FILE,
  TAPE_F2P,
  TAPE_FILE,
  UNITTEST_F2P,
  UNITTEST_FILE,
  VITEST_F2P,
  VITEST_FILE,
} from './canary-files.js';
import { installTape } from './tape-package.js';

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

const REPO = resolve(import.meta.dirname, '../..');
const PYTHON = join(REPO, '.tools/venv/bin/python');
const dirs: string[] = [];
afterAll(() => removeDirs(dirs));

/** The lines the canaries added: the file's lines less the original's, counted. */
function added(original: string, canary: Canary): string[] {
  const left = new Map<string, number>();
  for (const l of original.split('\n')) left.set(l, (left.get(l) ?? 0) + 1);
  return canary.text.split('\n').filter((l) => {
    const n = left.get(l) ?? 0;
    left.set(l, n - 1);
    return n <= 0;
  });
}

/** The block of the file a canary title or name sits in: the line of its enclosing header. */
function enclosing(text: string, name: string, header: RegExp): string | undefined {
  const lines = text.split('\n');
  const at = lines.findIndex((l) => l.includes(name));
  for (let i = at; i >= 0; i--) if (header.test(lines[i]!)) return lines[i]!.trim();
  return undefined;
}

const CALC_PY = 'def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n';
const MATH_CJS =
  "exports.add = (a, b) => {\n  if (b === undefined) throw new TypeError('operand');\n  return a - b;\n};\n";

/** Runs a runner on `files` in a fresh directory; the statuses of the tests it reported. */
async function run(
  framework: TestFramework | 'tape',
  files: Record<string, string>,
): Promise<Record<string, string>> {
  const dir = await tempDir('canary-run');
  dirs.push(dir);
  await writeTree(dir, files);
  const report = join(dir, 'report');
  const test = Object.keys(files).find((p) => p.includes('hidden'))!;
  const exec = (cmd: string, args: string[]): string =>
    spawnSync(cmd, args, { cwd: dir, encoding: 'utf8', timeout: 60_000 }).stdout;
  if (framework !== 'pytest' && framework !== 'unittest')
    await symlink(join(REPO, 'node_modules'), join(dir, 'node_modules'));
  switch (framework) {
    case 'unittest':
      exec(PYTHON, [join(REPO, 'tasks/reward/runners/unittest_json.py'), report]);
      break;
    case 'pytest':
      exec(PYTHON, [
        '-m',
        'pytest',
        '-p',
        'no:cacheprovider',
        '-o',
        'junit_family=xunit1',
        `--junitxml=${report}`,
        '-q',
      ]);
      break;
    case 'mocha':
      exec('node', [
        'node_modules/mocha/bin/mocha.js',
        '--no-config',
        '--reporter',
        'json',
        '--reporter-option',
        `output=${report}`,
        test,
      ]);
      break;
    case 'vitest':
      exec('node', [
        'node_modules/vitest/vitest.mjs',
        'run',
        '--reporter=json',
        `--outputFile=${report}`,
        test,
      ]);
      break;
    case 'jest':
      exec('node', [
        'node_modules/jest/bin/jest.js',
        '--ci',
        '--no-watchman',
        '--config',
        JSON.stringify({ rootDir: dir, cacheDirectory: join(dir, '.jest') }),
        '--json',
        `--outputFile=${report}`,
        '--runTestsByPath',
        test,
      ]);
      break;
    case 'tape': {
      // tape is not in this package's node_modules: a copy of its own.
      await rm(join(dir, 'node_modules'));
      await installTape(dir);
      return parseTestLog('tap', exec('node', [test]));
    }
    default:
      throw new Error(framework);
  }
  return parseReport(framework, await readFile(report, 'utf8'));
}

describe('canaries among the hidden tests', () => {
  it('unittest: methods of the FAIL_TO_PASS class, through assertEqual, assertTrue and assertRaises', async () => {
    const path = 'tests/test_calc_hidden.py';
    const canary = makeCanary('unittest', path, UNITTEST_FILE, UNITTEST_F2P)!;
    expect(canary.ids.length).toBeGreaterThanOrEqual(4);
    for (const id of canary.ids) {
      expect(id).toMatch(/^tests\.test_calc_hidden\.TestAddition\.test_\w+$/);
      const name = id.split('.').pop()!;
      expect(enclosing(canary.text, `def ${name}(`, /^class /)).toBe(
        'class TestAddition(unittest.TestCase):',
      );
    }
    const lines = added(UNITTEST_FILE, canary).join('\n');
    expect(lines).toMatch(/^ {8}with self\.assertRaises\(/m);
    expect(lines).toMatch(/^ {8}self\.assertEqual\(/m);
    expect(lines).toMatch(/^ {8}self\.assertTrue\(/m);
    expect(lines).toMatch(/^ {8}self\.assertIn\(/m);
    expect(lines).not.toMatch(/import|_unittest_/);
    // Not appended: the last lines of the file are the file's own.
    expect(canary.text.endsWith('    unittest.main()\n')).toBe(true);
    const dir = await tempDir('canary-py');
    dirs.push(dir);
    await writeFile(join(dir, 'x.py'), canary.text);
    execFileSync(PYTHON, ['-m', 'py_compile', join(dir, 'x.py')]);
    const reported = await run('unittest', {
      'calc/__init__.py': CALC_PY,
      'tests/__init__.py': '',
      [path]: canary.text,
    });
    for (const id of canary.ids) expect([id, reported[id]]).toEqual([id, 'failed']);
    expect(reported['tests.test_calc_hidden.TestParsing.test_parse_number']).toBe('passed');
  });

  it('pytest: functions beside the parametrized FAIL_TO_PASS test, through assert, approx and raises', async () => {
    const path = 'tests/test_calc_hidden.py';
    const canary = makeCanary('pytest', path, PYTEST_FILE, PYTEST_F2P)!;
    for (const id of canary.ids) expect(id).toMatch(/^tests\/test_calc_hidden\.py::test_\w+$/);
    const lines = added(PYTEST_FILE, canary).join('\n');
    expect(lines).toMatch(/^ {4}with pytest\.raises\(TypeError\):$/m);
    expect(lines).toMatch(/^ {4}assert -?\d+ == pytest\.approx\(-?\d+\)$/m);
    expect(lines).toMatch(/^ {4}assert /m);
    const reported = await run('pytest', {
      'calc/__init__.py': CALC_PY,
      'tests/__init__.py': '',
      [path]: canary.text,
    });
    for (const id of canary.ids) expect([id, reported[id]]).toEqual([id, 'failed']);
    expect(reported['tests/test_calc_hidden.py::TestAddMany::test_add_chain']).toBe('failed');
  });

  it('mocha: inside the FAIL_TO_PASS describe, through assert.strictEqual, assert.throws and chai', async () => {
    const path = 'test/hidden.test.js';
    const canary = makeCanary('mocha', path, MOCHA_FILE, MOCHA_F2P)!;
    for (const id of canary.ids) expect(id).toMatch(/^math add \S/);
    const lines = added(MOCHA_FILE, canary).join('\n');
    expect(lines).toMatch(/^ {6}assert\.throws\(\(\) => \{\}\);$/m);
    expect(lines).toMatch(/^ {6}assert\.strictEqual\(/m);
    expect(lines).toMatch(/^ {6}assert\.equal\(/m);
    expect(lines).toMatch(/^ {6}expect\(\[.+\]\)\.to\.deep\.equal\(\[.+\]\);$/m);
    expect(lines).toMatch(/^ {4}it\('[^']+', function \(\) \{$/m);
    expect(lines).not.toMatch(/require|import/);
    execFileSync('node', ['--check', '-'], { input: canary.text });
    const reported = await run('mocha', { 'src/math.cjs': MATH_CJS, [path]: canary.text });
    for (const id of canary.ids) expect([id, reported[id]]).toEqual([id, 'failed']);
    expect(reported['math format prints numbers']).toBe('passed');
  });

  it("tape: top-level tests with the file's test binding and callback param, through t.equal, t.deepEqual, t.throws", async () => {
    const path = 'test/hidden.js';
    const canary = canaryPlanOf({ log_parser: 'tap' })!.make(path, TAPE_FILE, TAPE_F2P, (n) =>
      Buffer.from(Array.from({ length: n }, () => Math.floor(Math.random() * 256))),
    )!;
    const lines = added(TAPE_FILE, canary).join('\n');
    expect(lines).toMatch(/^test\('[^']+', function \(t\) \{$/m);
    expect(lines).toMatch(/^ {2}t\.deepEqual\(\[.+\], \[.+\]\);$/m);
    expect(lines).toMatch(/^ {2}t\.throws\(\(\) => \{\}\);$/m);
    expect(lines).toMatch(/^ {2}t\.equal\(/m);
    expect(lines).toMatch(/^ {2}t\.end\(\);$/m);
    execFileSync('node', ['--check', '-'], { input: canary.text });
    const reported = await run('tape', { 'src/math.cjs': MATH_CJS, [path]: canary.text });
    for (const id of canary.ids) expect([id, reported[id]]).toEqual([id, 'failed']);
    expect(reported['add throws without operands']).toBe('passed');
    // A TAP run of a file that uses neither tape nor node:test has nothing to write canaries for.
    expect(
      canaryPlanOf({ log_parser: 'tap' })!.make('t.js', "console.log('ok 1');\n", [], () =>
        Buffer.alloc(4),
      ),
    ).toBeUndefined();
  });

  it('vitest: inside the FAIL_TO_PASS describe, through toBe, toThrow and not.toEqual', async () => {
    const path = 'test/hidden.test.js';
    const canary = makeCanary('vitest', path, VITEST_FILE, VITEST_F2P)!;
    for (const id of canary.ids) expect(id).toMatch(/^add > (lists > )?[^>]+$/);
    const lines = added(VITEST_FILE, canary).join('\n');
    expect(lines).toMatch(/^ {4}expect\(\(\) => \{\}\)\.toThrow\(\);$/m);
    expect(lines).toMatch(/^ {4,6}expect\(.+\)\.not\.toEqual\(/m);
    expect(lines).toMatch(/^ {4}expect\(.+\)\.toBe\(/m);
    const reported = await run('vitest', {
      'package.json': '{ "type": "module" }\n',
      'src/math.js': 'export const add = (a, b) => a - b;\n',
      [path]: canary.text,
    });
    for (const id of canary.ids) expect([id, reported[id]]).toEqual([id, 'failed']);
  });

  it("jest: through the global expect, resolves and toThrow, in the file's arrow style", async () => {
    const path = 'test/hidden.test.js';
    const canary = makeCanary('jest', path, JEST_FILE, JEST_F2P)!;
    const lines = added(JEST_FILE, canary).join('\n');
    expect(lines).toMatch(/await expect\(Promise\.resolve\(.+\)\)\.resolves\.toEqual\(/);
    expect(lines).toMatch(/expect\(\(\) => \{\}\)\.toThrow\(\)/);
    expect(lines).toMatch(/async \(\) => /);
    execFileSync('node', ['--check', '-'], { input: canary.text });
    const reported = await run('jest', {
      'package.json': '{ "name": "x" }\n',
      'src/math.js': MATH_CJS,
      [path]: canary.text,
    });
    for (const id of canary.ids) expect([id, reported[id]]).toEqual([id, 'failed']);
  });

  it('names come from the file and vary; canaries sit at varying places', () => {
    const vocabulary = new Set([
      'add',
      'small',
      'numbers',
      'rejects',
      'none',
      'is',
      'positive',
      'parse',
      'number',
      'text',
      'mul',
      'keeps',
      'sign',
    ]);
    const names = new Set<string>();
    const lengths = new Set<number>();
    const firstLines = new Set<number>();
    for (let i = 0; i < 50; i++) {
      const canary = makeCanary(
        'unittest',
        'tests/test_calc_hidden.py',
        UNITTEST_FILE,
        UNITTEST_F2P,
      )!;
      for (const id of canary.ids) {
        const name = id.split('.').pop()!;
        names.add(name);
        lengths.add(name.length);
        for (const w of name.split('_').slice(1)) expect(vocabulary).toContain(w);
      }
      const lines = canary.text.split('\n');
      firstLines.add(lines.findIndex((l, j) => l !== UNITTEST_FILE.split('\n')[j]));
    }
    expect(names.size).toBeGreaterThan(40);
    expect(lengths.size).toBeGreaterThan(5);
    expect(firstLines.size).toBeGreaterThan(1);
    const titles = new Set<string>();
    const words = new Set(
      MOCHA_FILE.match(/it\('([^']+)'/g)!.flatMap((m) => m.slice(4, -1).split(' ')),
    );
    for (let i = 0; i < 50; i++) {
      for (const id of makeCanary('mocha', 'test/hidden.test.js', MOCHA_FILE, MOCHA_F2P)!.ids) {
        const title = id.slice('math add '.length);
        titles.add(title);
        for (const w of title.split(' ')) expect(words).toContain(w);
      }
    }
    expect(new Set([...titles].map((t) => t.split(' ').length)).size).toBeGreaterThan(1);
    expect(titles.size).toBeGreaterThan(20);
  });

  it("covers chai's should and tape's plan; records what it cannot make fail", () => {
    const should = `const chai = require('chai');
chai.should();

describe('sum', function () {
  it('adds up', function () {
    (1 + 1).should.equal(2);
    expect(render()).toMatchSnapshot();
  });
});
`;
    const canary = makeCanary('mocha', 'test/sum.test.js', should, ['sum adds up'])!;
    expect(added(should, canary).join('\n')).toMatch(/^ {4}\(.+\)\.should\.equal\(.+\);$/m);
    expect(canary.uncovered).toEqual([]);
    const jest = makeCanary('jest', 'test/sum.test.js', should, ['sum adds up'])!;
    // Snapshot matchers would write snapshots: left out, and said so.
    expect(jest.uncovered).toEqual(['expect.toMatchSnapshot']);
    const planned =
      "const test = require('tape');\n\ntest('adds', (t) => {\n  t.plan(1);\n  t.equal(1 + 1, 2);\n});\n";
    const tape = canaryPlanOf({ log_parser: 'tap' })!.make('test/a.js', planned, ['adds'], (n) =>
      Buffer.from(Array.from({ length: n }, (_, i) => i * 7)),
    )!;
    const lines = added(planned, tape);
    expect(lines.filter((l) => l === '  t.plan(1);')).toHaveLength(tape.ids.length);
    expect(lines.join('\n')).not.toContain('t.end()');
  });

  it("falls back to the file's own tests when no FAIL_TO_PASS test is in it", () => {
    const canary = makeCanary('mocha', 'test/hidden.test.js', MOCHA_FILE, ['elsewhere'])!;
    expect(canary.ids.length).toBeGreaterThan(0);
    for (const id of canary.ids) expect(id).toMatch(/^math (add|format) /);
    const py = makeCanary('unittest', 'tests/test_x.py', 'import unittest\n', [])!;
    execFileSync(PYTHON, ['-c', 'import ast, sys; ast.parse(sys.stdin.read())'], {
      input: py.text,
    });
    expect(py.ids.length).toBeGreaterThan(0);
  });
});
