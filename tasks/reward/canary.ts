/**
 * Canary tests: tests that must fail, written by the reward into the hidden test files after the
 * test patch. The tests run the agent's code, which could neuter the assertion library, patch the
 * runner or forge the report. A canary that passes or is skipped shows that, and so does one
 * missing from a report that would otherwise resolve the task: the reward is 0 with reason
 * `tampered` (tasks/reward/index.ts). A canary missing because its file failed to import is an
 * honest failure, and scores as one.
 *
 * Canaries must not be told from the hidden tests (../../../shared/specs/sandbox.md): each is
 * written among the tests of the file, inside the classes or `describe` blocks of the
 * FAIL_TO_PASS tests, named from the file's own words, with the file's values and bindings, and
 * one per assertion entry point the file's tests use, so that neutering any of them makes a
 * canary pass (canary-python.ts, canary-js.ts). They go into every hidden test file rather than
 * a file of their own: node:test, vitest and jest run each file in its own process, module graph
 * or context, so a shim loaded by the code under test is only seen by tests in files that import it.
 */
import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';
import type { TestFramework } from '../schema.js';
import { jsCanary } from './canary-js.js';
import { pythonCanary } from './canary-python.js';
import { below, pick } from './canary-style.js';
import { splitDiff } from './diff.js';

export interface Canary {
  /** Sandbox path (relative to /workspace) written with `text`; created when missing. */
  path: string;
  /** The whole file, canaries included. */
  text: string;
  /** Report ids of the canary tests, as `parseReport` names them. */
  ids: string[];
  /** Entry points the file's tests use that no canary could be made to fail through. */
  uncovered?: string[];
}

export type Random = (bytes: number) => Buffer;

/** `n` random lowercase letters. */
export function letters(random: Random, n: number): string {
  return [...random(n)].map((b) => String.fromCharCode(97 + (b % 26))).join('');
}

/** Two different random integers. */
export function values(random: Random): [number, number] {
  const [a, b] = [random(4).readUInt32LE(0) % 900_000, random(4).readUInt32LE(0) % 900_000];
  return [100_000 + a, 100_000 + (a === b ? (b + 1) % 900_000 : b)];
}

/** Files the framework's default discovery runs, by name (node:test also: anything under test/). */
function isRunnerTestFile(framework: TestFramework, path: string): boolean {
  const base = posix.basename(path);
  switch (framework) {
    case 'pytest':
      return /^test_.*\.py$|_test\.py$/.test(base);
    case 'unittest':
      return /^test.*\.py$/.test(base);
    case 'vitest':
      return /\.(?:test|spec)\.(?:js|mjs|cjs|ts|mts|cts|jsx|tsx)$/.test(base);
    case 'node-test':
      return (
        /\.(?:js|mjs|cjs)$/.test(base) &&
        (/^test(?:-.*)?\.[mc]?js$|[.\-_]test\.[mc]?js$/.test(base) ||
          path.split('/').slice(0, -1).includes('test'))
      );
    case 'mocha':
      return (
        /\.(?:js|mjs|cjs)$/.test(base) &&
        (/(?:^|\.)(?:test|spec)\.[mc]?js$/.test(base) ||
          path
            .split('/')
            .slice(0, -1)
            .some((d) => d === 'test' || d === 'tests'))
      );
    case 'jest':
      return (
        /\.[mc]?[jt]sx?$/.test(base) &&
        (/(?:^|\.)(?:test|spec)\.[mc]?[jt]sx?$/.test(base) ||
          path.split('/').slice(0, -1).includes('__tests__'))
      );
  }
}

/** The files of the patch that exist after it, by their new names. */
export function keptPaths(patch: string): string[] {
  return splitDiff(patch)
    .filter((s) => s.paths.length > 0 && !/^deleted file mode /m.test(s.text))
    .map((s) => s.paths[s.paths.length - 1]!);
}

/**
 * The files of the test patch that exist after it and that the runner runs; when there is none,
 * one new file beside the first of the patch's files.
 */
export function canaryTargets(
  framework: TestFramework,
  testPatch: string,
  random: Random = randomBytes,
): { path: string; created: boolean }[] {
  const kept = keptPaths(testPatch);
  const targets = kept.filter((p) => isRunnerTestFile(framework, p));
  if (targets.length > 0) return targets.map((path) => ({ path, created: false }));
  const dir = posix.dirname(kept[0] ?? 'tests/x');
  const name = letters(random, 10);
  const file: Record<TestFramework, string> = {
    pytest: `test_${name}.py`,
    unittest: `test_${name}.py`,
    vitest: `${name}.test.mjs`,
    'node-test': `${name}.test.mjs`,
    mocha: `${name}.test.mjs`,
    jest: `${name}.test.js`,
  };
  return [{ path: posix.join(dir, file[framework]), created: true }];
}

/**
 * What a file the reward creates starts as: the framework's imports and one plain test for the
 * canaries to stand beside (there are no hidden tests to imitate).
 */
function createdFile(framework: TestFramework, random: Random): string {
  const title = `${pick(random, ['keeps', 'returns', 'reads'])} ${pick(random, ['values', 'input', 'state'])}`;
  const n = below(random, 100);
  const test = (callee: string, check: string): string =>
    `\n${callee}('${title}', () => {\n  ${check};\n});\n`;
  switch (framework) {
    case 'vitest':
      return `import { expect, test } from 'vitest';\n${test('test', `expect(${n}).toBe(${n})`)}`;
    case 'jest':
      return test('test', `expect(${n}).toBe(${n})`);
    case 'mocha':
      return `import assert from 'node:assert';\n${test('it', `assert.strictEqual(${n}, ${n})`)}`;
    case 'node-test':
      return `import assert from 'node:assert';\nimport { test } from 'node:test';\n${test('test', `assert.strictEqual(${n}, ${n})`)}`;
    default:
      return '';
  }
}

/**
 * The hidden test file `path` with its canaries written in. `content` is the file as the test
 * patch left it ('' for a file the reward creates); `failToPass` the task's FAIL_TO_PASS ids,
 * whose classes and `describe` blocks the canaries go into. Undefined when the file holds no
 * tests a canary could stand among.
 */
export function makeCanary(
  framework: TestFramework,
  path: string,
  content: string,
  failToPass: string[] = [],
  random: Random = randomBytes,
): Canary | undefined {
  if (framework === 'pytest' || framework === 'unittest')
    return pythonCanary({ framework, path, content, failToPass, random });
  const source = content === '' ? createdFile(framework, random) : content;
  return jsCanary({ style: framework, path, content: source, failToPass, random });
}
