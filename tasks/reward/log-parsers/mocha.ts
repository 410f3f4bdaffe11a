/**
 * mocha's spec reporter (its default):
 *
 *     math
 *       ✔ adds
 *       ✔ slow (121ms)
 *       1) fails
 *       - not yet
 *
 *     2 passing (126ms)
 *
 * Test ids are mocha's full titles, the enclosing `describe` names and the test's joined by
 * single spaces (`math adds`), as in mocha's JSON report (tasks/reward/report.ts) and `--grep`.
 * Nesting is read from indentation, two spaces a level; a failed hook is reported under its own
 * title (`math "before each" hook for "adds"`), so the tests it stopped are missing. The numbered
 * failure details after the `N passing` line are skipped up to the next passing test line (a
 * second run). A test that prints indented text among the test lines can confuse the nesting of
 * the tests after it in its suite.
 */
import type { ReportedStatus } from '../junit.js';
import { dropParenDuration, indentOf, logLines, record, type TestStatuses } from './lines.js';

const PASSED = /^ +[✔✓√] (.+)$/u;
const FAILED = /^ +\d+\) (.+)$/;
const PENDING = /^ +- (.+)$/;
const SUMMARY = /^ *\d+ passing(?: \(.*\))?$/;

function testLine(line: string): [string, ReportedStatus] | undefined {
  const passed = PASSED.exec(line);
  if (passed) return [dropParenDuration(passed[1]!), 'passed'];
  const failed = FAILED.exec(line);
  if (failed) return [failed[1]!, 'failed'];
  const pending = PENDING.exec(line);
  return pending ? [pending[1]!, 'skipped'] : undefined;
}

export function parseMochaLog(log: string): TestStatuses {
  const results: TestStatuses = {};
  let inDetails = false;
  let suites: string[] = [];
  for (const line of logLines(log)) {
    if (SUMMARY.test(line)) {
      inDetails = true;
      suites = [];
      continue;
    }
    if (inDetails && !PASSED.test(line)) continue;
    inDetails = false;
    const indent = indentOf(line);
    if (indent === 0) continue;
    const depth = Math.max(0, Math.floor(indent / 2) - 1);
    const test = testLine(line);
    if (test) record(results, [...suites.slice(0, depth), test[0]].join(' '), test[1]);
    else suites = [...suites.slice(0, depth), line.slice(indent)];
  }
  return results;
}
