/** Reading a test runner's machine-readable report into test id → status. */
import type { TestFramework } from '../schema.js';
import { parseJUnit, type ReportedStatus } from './junit.js';

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

export function parseReport(
  framework: TestFramework,
  text: string,
): Record<string, ReportedStatus> {
  switch (framework) {
    case 'unittest':
      return parseUnittestJson(text);
    case 'node-test':
      return parseJUnit(text);
  }
}
