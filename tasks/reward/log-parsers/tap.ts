/**
 * TAP (version 13 and 14), as `node --test --test-reporter=tap` and tape print it.
 *
 * - node:test: each test is announced by `# Subtest: <name>` and ends with its own `ok`/`not ok`
 *   line at the same indentation, four spaces a level. Test ids are the names of the enclosing
 *   tests and the test joined by " > ", as in node:test's JUnit report (tasks/reward/report.ts):
 *   `math > nested > adds`; a suite is recorded under its own id too.
 * - tape: a `# <name>` comment at the top level opens test `<name>`, and the `ok`/`not ok` lines
 *   after it are that test's assertions: the test is recorded under `<name>` with the worst
 *   status of its assertions. The closing counts (`# tests 3`, `# pass 2`, `# fail 1`, `# ok`)
 *   are not tests.
 *
 * `# SKIP` and `# TODO` directives count as skipped; `\#` in a description is a literal `#`.
 * YAML diagnostic blocks (`---` … `...`) are skipped, whatever they hold.
 */
import type { ReportedStatus } from '../junit.js';
import { indentOf, logLines, record, type TestStatuses } from './lines.js';

const POINT = /^(not ok|ok)\b(?: +\d+)?(?: +-)?(?: +(.*))?$/;
const SUBTEST = /^# Subtest: (.*)$/;
const COUNTS =
  /^# (?:tests|suites|pass|fail|failed|cancelled|skipped|skip|todo|duration_ms|ok)(?: +[\d.]+)?$/;
const LEVEL = 4;

/** Splits `desc # SKIP reason` at the first unescaped `#`; unescapes `\#` and `\\`. */
function descriptionOf(text: string): { name: string; directive: string } {
  let name = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\\' && (text[i + 1] === '#' || text[i + 1] === '\\')) {
      name += text[i + 1];
      i++;
    } else if (c === '#') {
      return {
        name: name.trim(),
        directive: text
          .slice(i + 1)
          .trim()
          .toLowerCase(),
      };
    } else {
      name += c;
    }
  }
  return { name: name.trim(), directive: '' };
}

function statusOf(ok: boolean, directive: string): ReportedStatus {
  if (directive.startsWith('skip') || directive.startsWith('todo')) return 'skipped';
  return ok ? 'passed' : 'failed';
}

export function parseTapLog(log: string): TestStatuses {
  const results: TestStatuses = {};
  const subtests: string[] = [];
  let tapeTest: string | undefined;
  let yamlIndent = -1;
  for (const line of logLines(log)) {
    const indent = indentOf(line);
    const text = line.slice(indent);
    if (yamlIndent >= 0) {
      if (indent === yamlIndent && text === '...') yamlIndent = -1;
      continue;
    }
    if (text === '---') {
      yamlIndent = indent;
      continue;
    }
    const level = Math.floor(indent / LEVEL);
    const subtest = SUBTEST.exec(text);
    if (subtest) {
      subtests.length = level;
      subtests[level] = subtest[1]!.trim();
      if (level === 0) tapeTest = undefined;
      continue;
    }
    if (level === 0 && text.startsWith('#')) {
      if (!COUNTS.test(text)) tapeTest = text.slice(1).trim() || undefined;
      continue;
    }
    const point = POINT.exec(text);
    if (!point) continue;
    const { name, directive } = descriptionOf(point[2] ?? '');
    const status = statusOf(point[1] === 'ok', directive);
    if (level === 0 && tapeTest !== undefined && subtests.length === 0) {
      record(results, tapeTest, status);
      continue;
    }
    if (name !== '') record(results, [...subtests.slice(0, level), name].join(' > '), status);
    subtests.length = level;
  }
  return results;
}
