/**
 * vitest's verbose reporter (`--reporter=verbose`), one line per test:
 *
 *    ✓ test/math.test.js > math > adds 1ms
 *    × test/math.test.js > math > fails 4ms
 *    ↓ test/math.test.js > math > not yet
 *
 * and the `FAIL test/math.test.js > math > fails` headers of the failure details. Test ids are the
 * suite and test names after the file, joined by " > ", as in vitest's JSON report
 * (tasks/reward/report.ts): `math > adds`. Skipped (↓) and todo (□) tests count as skipped.
 */
import type { ReportedStatus } from '../junit.js';
import { logLines, record, type TestStatuses } from './lines.js';

const TEST = /^ *([✓√×✗↓□]) (.+)$/u;
const FAIL_HEADER = /^ *FAIL +(.+)$/;

const MARKS: Record<string, ReportedStatus> = {
  '✓': 'passed',
  '√': 'passed',
  '×': 'failed',
  '✗': 'failed',
  '↓': 'skipped',
  '□': 'skipped',
};

/**
 * `file > suite > test 12ms` → `suite > test`, a workspace project's `|name| ` before the file
 * dropped too; undefined when no test follows the file.
 */
function idOf(line: string): string | undefined {
  const project = line.startsWith('|') ? line.indexOf('| ', 1) : -1;
  const text = project > 0 ? line.slice(project + 2) : line;
  const first = text.indexOf(' > ');
  if (first < 0) return undefined;
  const rest = text.slice(first + 3);
  const space = rest.lastIndexOf(' ');
  return space > 0 && /^\d+(?:\.\d+)?m?s$/.test(rest.slice(space + 1))
    ? rest.slice(0, space)
    : rest;
}

export function parseVitestLog(log: string): TestStatuses {
  const results: TestStatuses = {};
  for (const line of logLines(log)) {
    const test = TEST.exec(line);
    const header = test ? undefined : FAIL_HEADER.exec(line);
    const id = test ? idOf(test[2]!) : header ? idOf(header[1]!) : undefined;
    if (id !== undefined) record(results, id, test ? MARKS[test[1]!]! : 'failed');
  }
  return results;
}
