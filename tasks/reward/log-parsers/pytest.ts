/**
 * pytest's console output. Test ids are node ids, `tests/test_x.py::TestClass::test_method[param]`,
 * read from two kinds of line:
 *
 * - the short test summary `-rA` prints (what SWE-bench's harness reads): `PASSED <id>`,
 *   `FAILED <id> - <message>`, `ERROR <id>`, `XFAIL <id>`, `XPASS <id>`;
 * - the per-test lines of `-v`: `<id> PASSED [ 50%]`, `<id> SKIPPED (reason) [ 60%]`.
 *
 * As in SWE-bench's grading, XFAIL counts as passed and XPASS as not passed (failed). A skip in
 * the short summary names only a file and line (`SKIPPED [1] tests/x.py:12: reason`), not the
 * test, so a skipped test is missing unless `-v` named it. A parameter may hold spaces and " - "
 * (`test_x[a - b]`): an id ends at the first space outside its brackets.
 */
import type { ReportedStatus } from '../junit.js';
import { logLines, record, type TestStatuses } from './lines.js';

const STATUSES: Record<string, ReportedStatus> = {
  PASSED: 'passed',
  XFAIL: 'passed',
  FAILED: 'failed',
  ERROR: 'failed',
  XPASS: 'failed',
  SKIPPED: 'skipped',
};
const SUMMARY = /^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S.*)$/;

/** The node id at the start of `text`: up to the first space outside square brackets. */
function leadingId(text: string): string {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '[') depth++;
    else if (c === ']') depth = Math.max(0, depth - 1);
    else if (c === ' ' && depth === 0) return text.slice(0, i);
  }
  if (depth === 0) return text;
  // Unbalanced brackets: the message, if any, follows pytest's " - ".
  const dash = text.indexOf(' - ');
  return dash < 0 ? text : text.slice(0, dash);
}

/** `<id> STATUS[ (reason)][ [ nn%]]` of `-v`, or undefined. */
function verboseLine(line: string): [string, ReportedStatus] | undefined {
  let text = line;
  if (text.endsWith('%]')) {
    const open = text.lastIndexOf('[');
    if (open < 0 || !/^\[ *\d+%\]$/.test(text.slice(open))) return undefined;
    text = text.slice(0, open).trimEnd();
  }
  const sep = text.indexOf('::');
  if (sep <= 0) return undefined;
  let best: [string, ReportedStatus] | undefined;
  let bestAt = -1;
  for (const [word, status] of Object.entries(STATUSES)) {
    const at = text.lastIndexOf(` ${word}`);
    if (at <= sep || at < bestAt) continue;
    const after = text.slice(at + word.length + 1);
    if (after === '' || after.startsWith(' (')) {
      best = [text.slice(0, at), status];
      bestAt = at;
    }
  }
  // An id with a space is one id only when the space is inside its brackets.
  return best && leadingId(best[0]) === best[0] ? best : undefined;
}

export function parsePytestLog(log: string): TestStatuses {
  const results: TestStatuses = {};
  for (const line of logLines(log)) {
    const summary = SUMMARY.exec(line);
    if (summary) {
      const rest = summary[2]!;
      // `SKIPPED [1] path:line: reason` names no test.
      if (rest.startsWith('[')) continue;
      const id = leadingId(rest);
      if (id.includes('::') || id.endsWith('.py')) record(results, id, STATUSES[summary[1]!]!);
      continue;
    }
    const verbose = verboseLine(line);
    if (verbose) record(results, verbose[0], verbose[1]);
  }
  return results;
}
