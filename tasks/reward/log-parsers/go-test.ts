/**
 * `go test -v` output. Test ids are Go's test names, subtests joined by "/" with spaces made
 * underscores (as `-run` matches them): `TestAdd`, `TestTable/one_plus/deeper`. Read from the
 * `--- PASS: TestX (0.00s)`, `--- FAIL: …` and `--- SKIP: …` lines, at any indentation. A package
 * that does not build or panics leaves its tests that did not end missing.
 */
import type { ReportedStatus } from '../junit.js';
import { logLines, record, type TestStatuses } from './lines.js';

const RESULT = /^\s*--- (PASS|FAIL|SKIP): (\S+)(?: \(|$)/;
const STATUSES: Record<string, ReportedStatus> = {
  PASS: 'passed',
  FAIL: 'failed',
  SKIP: 'skipped',
};

export function parseGoTestLog(log: string): TestStatuses {
  const results: TestStatuses = {};
  for (const line of logLines(log)) {
    const m = RESULT.exec(line);
    if (m) record(results, m[2]!, STATUSES[m[1]!]!);
  }
  return results;
}
