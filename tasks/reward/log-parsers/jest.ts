/**
 * jest's default reporter, per-test lines as it prints them for a single test file or with
 * `--verbose`:
 *
 *   FAIL test/math.test.js
 *     math
 *       ✓ adds (2 ms)
 *       ✕ fails (1 ms)
 *       ○ skipped not yet
 *       ✎ todo later
 *
 * Test ids are the names of the enclosing `describe` blocks and the test joined by " > ", as in
 * jest's JSON report (tasks/reward/report.ts): `math > adds`. Nesting is read from indentation,
 * two spaces a level below the `PASS`/`FAIL` file line; the list ends at the first failure detail
 * (`● math › fails`). Skipped and todo tests count as skipped.
 */
import type { ReportedStatus } from '../junit.js';
import { dropParenDuration, indentOf, logLines, record, type TestStatuses } from './lines.js';

/** The file line; with colours, PASS and FAIL are printed inverted, padded with spaces. */
const FILE = /^ ?(?:PASS|FAIL) +\S/;
const TEST = /^( +)([✓√✕×○✎]) (.+)$/u;

const MARKS: Record<string, ReportedStatus> = {
  '✓': 'passed',
  '√': 'passed',
  '✕': 'failed',
  '×': 'failed',
  '○': 'skipped',
  '✎': 'skipped',
};

function titleOf(mark: string, text: string): string {
  if (mark === '○' && text.startsWith('skipped ')) return text.slice(8);
  if (mark === '✎' && text.startsWith('todo ')) return text.slice(5);
  return dropParenDuration(text);
}

export function parseJestLog(log: string): TestStatuses {
  const results: TestStatuses = {};
  let inList = false;
  let suites: string[] = [];
  for (const line of logLines(log)) {
    if (FILE.test(line)) {
      inList = true;
      suites = [];
      continue;
    }
    if (!inList || line === '') continue;
    const indent = indentOf(line);
    if (indent === 0 || line.startsWith('●', indent) || line.startsWith('Test Suites:')) {
      inList = false;
      continue;
    }
    const depth = Math.max(0, Math.floor(indent / 2) - 1);
    const test = TEST.exec(line);
    if (test) {
      const mark = test[2]!;
      const id = [...suites.slice(0, depth), titleOf(mark, test[3]!)].join(' > ');
      record(results, id, MARKS[mark]!);
    } else {
      suites = [...suites.slice(0, depth), line.slice(indent)];
    }
  }
  return results;
}
