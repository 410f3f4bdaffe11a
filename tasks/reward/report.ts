/**
 * Reading a test runner's machine-readable report into test id → status. Test ids per runner:
 *
 * - pytest: node ids, `tests/test_x.py::TestClass::test_method[param]` (see `parsePytestJUnit`);
 * - unittest: `test.id()`, `tests.test_x.TestClass.test_method`;
 * - vitest and node:test: the names of the enclosing `describe` blocks and the test, joined by
 *   " > ": `math > nested > adds`.
 */
import type { TestFramework } from '../schema.js';
import { z } from 'zod';
import { parseJUnit, parsePytestJUnit, type ReportedStatus } from './junit.js';

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
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new ReportParseError(`unittest report is not JSON: ${(err as Error).message}`);
  }
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

const VITEST_STATUSES: Record<string, ReportedStatus> = {
  passed: 'passed',
  failed: 'failed',
  skipped: 'skipped',
  pending: 'skipped',
  todo: 'skipped',
  disabled: 'skipped',
};

/** The part of vitest's (and jest's) JSON report the reward reads. */
const VitestReportSchema = z.object({
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

/** `vitest run --reporter=json`: one entry per test file, one assertion result per test. */
export function parseVitestJson(text: string): Record<string, ReportedStatus> {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new ReportParseError(`vitest report is not JSON: ${(err as Error).message}`);
  }
  const parsed = VitestReportSchema.safeParse(data);
  if (!parsed.success)
    throw new ReportParseError(`vitest report: ${z.prettifyError(parsed.error)}`);
  const rank: Record<ReportedStatus, number> = { passed: 0, skipped: 1, failed: 2 };
  const results: Record<string, ReportedStatus> = {};
  for (const file of parsed.data.testResults) {
    for (const test of file.assertionResults) {
      const status = VITEST_STATUSES[test.status] ?? 'failed';
      const id = [...test.ancestorTitles, test.title].join(' > ');
      const prev = results[id];
      if (prev === undefined || rank[status] > rank[prev]) results[id] = status;
    }
  }
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
  }
}
