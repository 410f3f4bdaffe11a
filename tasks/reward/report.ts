/**
 * Reading a test runner's machine-readable report into test id → status. Test ids per runner:
 *
 * - pytest: node ids, `tests/test_x.py::TestClass::test_method[param]` (see `parsePytestJUnit`);
 * - unittest: `test.id()`, `tests.test_x.TestClass.test_method`;
 * - vitest, jest and node:test: the names of the enclosing `describe` blocks and the test, joined
 *   by " > ": `math > nested > adds`;
 * - mocha: mocha's own full title, the names of the enclosing `describe` blocks and the test
 *   joined by single spaces (`math nested adds`), as `--grep` matches it. mocha's JSON reporter
 *   keeps no title path, so the " > " form cannot be rebuilt from it.
 *
 * Tests reported more than once under one id keep the worst status (failed over skipped over
 * passed), so a duplicate name cannot hide a failure.
 */
import type { TestFramework } from '../schema.js';
import { z } from 'zod';
import { parseJUnit, parsePytestJUnit, type ReportedStatus } from './junit.js';
import { record } from './log-parsers/lines.js';

export type { ReportedStatus } from './junit.js';
export { JUnitParseError } from './junit.js';

/** The report is missing pieces or is not what the runner writes. */
export class ReportParseError extends Error {
  override name = 'ReportParseError';
}

const UNITTEST_STATUSES: Record<string, ReportedStatus> = {
  passed: 'passed',
  failed: 'failed',
  error: 'failed',
  skipped: 'skipped',
};

/** `{ "<test id>": "passed" | "failed" | "error" | "skipped" }` from `runners/unittest_json.py`. */
export function parseUnittestJson(text: string): Record<string, ReportedStatus> {
  const data = parseJson('unittest', text);
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new ReportParseError('unittest report is not an object');
  }
  const results: Record<string, ReportedStatus> = {};
  for (const [id, raw] of Object.entries(data)) {
    const status = typeof raw === 'string' ? UNITTEST_STATUSES[raw] : undefined;
    if (!status) throw new ReportParseError(`unittest report: bad status for ${id}`);
    results[id] = status;
  }
  return results;
}

function parseJson(runner: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ReportParseError(`${runner} report is not JSON: ${(err as Error).message}`);
  }
}

/** Statuses of vitest's and jest's assertion results; any other status counts as failed. */
const ASSERTION_STATUSES: Record<string, ReportedStatus> = {
  passed: 'passed',
  failed: 'failed',
  skipped: 'skipped',
  pending: 'skipped',
  todo: 'skipped',
  disabled: 'skipped',
};

/** The part of vitest's and jest's JSON report the reward reads. */
const AssertionReportSchema = z.object({
  testResults: z.array(
    z.object({
      assertionResults: z.array(
        z.object({
          ancestorTitles: z.array(z.string()),
          title: z.string(),
          status: z.string(),
        }),
      ),
    }),
  ),
});

/** One entry per test file, one assertion result per test: vitest's and jest's JSON reports. */
function parseAssertionReport(runner: string, text: string): Record<string, ReportedStatus> {
  const parsed = AssertionReportSchema.safeParse(parseJson(runner, text));
  if (!parsed.success)
    throw new ReportParseError(`${runner} report: ${z.prettifyError(parsed.error)}`);
  const results: Record<string, ReportedStatus> = {};
  for (const file of parsed.data.testResults) {
    for (const test of file.assertionResults) {
      const id = [...test.ancestorTitles, test.title].join(' > ');
      record(results, id, ASSERTION_STATUSES[test.status] ?? 'failed');
    }
  }
  return results;
}

/** `vitest run --reporter=json`. */
export function parseVitestJson(text: string): Record<string, ReportedStatus> {
  return parseAssertionReport('vitest', text);
}

/**
 * `jest --json`. A test file that fails to run (a syntax or import error) has no assertion
 * results, so its tests are missing.
 */
export function parseJestJson(text: string): Record<string, ReportedStatus> {
  return parseAssertionReport('jest', text);
}

const MochaTestSchema = z.object({ fullTitle: z.string() });

/** The part of mocha's JSON reporter output the reward reads. */
const MochaReportSchema = z.object({
  tests: z.array(MochaTestSchema),
  passes: z.array(MochaTestSchema),
  failures: z.array(MochaTestSchema),
  pending: z.array(MochaTestSchema),
});

/**
 * `mocha --reporter json`: every test that ended, and the passed, failed and pending ones. A hook
 * failure is reported under the hook's own title (`add "before each" hook for "adds"`), so the
 * tests it stopped are missing; a test that ended in none of the three lists counts as failed.
 */
export function parseMochaJson(text: string): Record<string, ReportedStatus> {
  const parsed = MochaReportSchema.safeParse(parseJson('mocha', text));
  if (!parsed.success) throw new ReportParseError(`mocha report: ${z.prettifyError(parsed.error)}`);
  const { tests, passes, failures, pending } = parsed.data;
  const results: Record<string, ReportedStatus> = {};
  for (const t of passes) record(results, t.fullTitle, 'passed');
  for (const t of pending) record(results, t.fullTitle, 'skipped');
  for (const t of failures) record(results, t.fullTitle, 'failed');
  for (const t of tests) if (!(t.fullTitle in results)) results[t.fullTitle] = 'failed';
  return results;
}

export function parseReport(
  framework: TestFramework,
  text: string,
): Record<string, ReportedStatus> {
  switch (framework) {
    case 'pytest':
      return parsePytestJUnit(text);
    case 'unittest':
      return parseUnittestJson(text);
    case 'vitest':
      return parseVitestJson(text);
    case 'node-test':
      return parseJUnit(text);
    case 'mocha':
      return parseMochaJson(text);
    case 'jest':
      return parseJestJson(text);
  }
}
