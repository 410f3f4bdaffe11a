/**
 * unittest's verbose output (`python -m unittest -v`, Django's `runtests.py -v 2`). Test ids are
 * what SWE-bench's harness reads: `test_method (module.Class)`. Python 3.11 and later print
 * `test_method (module.Class.test_method)`; every test is recorded under both forms, since
 * datasets hold either depending on the Python their repository ran under.
 *
 * Lines read: `<test> ... ok|FAIL|ERROR|skipped 'why'|expected failure|unexpected success`, where
 * `<test>` is the name line, or the first docstring line printed under it; a status on a line of
 * its own, when the test printed something after the ` ... `; a subtest's line
 * (`  <test> (i=1) ... FAIL`), which counts for its test; and the `FAIL: <test>` and
 * `ERROR: <test>` headers of the failure details. An expected failure counts as passed and an
 * unexpected success as failed, as unittest's own verdict does.
 */
import type { ReportedStatus } from '../junit.js';
import { logLines, record, type TestStatuses } from './lines.js';

/** A name line; a subtest's (indented, its parameters after it) counts for its test. */
const NAME = /^ *([A-Za-z_]\w*) \(([A-Za-z_][\w.]*)\)(?: \(.*\))?$/;
const DETAIL_HEADER = /^(?:FAIL|ERROR): (\S.*)$/;

function statusOf(text: string): ReportedStatus | undefined {
  if (text === 'ok' || text === 'expected failure') return 'passed';
  if (text === 'FAIL' || text === 'ERROR' || text === 'unexpected success') return 'failed';
  if (text === 'skipped' || text.startsWith("skipped '") || text.startsWith('skipped "'))
    return 'skipped';
  return undefined;
}

/** Both id forms of a name line, or undefined when `text` is not one. */
function idsOf(text: string): string[] | undefined {
  const m = NAME.exec(text);
  if (!m) return undefined;
  const [, method, where] = m as unknown as [string, string, string];
  const short = where.endsWith(`.${method}`) ? where.slice(0, -method.length - 1) : where;
  if (!short.includes('.')) return [`${method} (${short})`];
  return [`${method} (${short})`, `${method} (${short}.${method})`];
}

export function parseUnittestLog(log: string): TestStatuses {
  const results: TestStatuses = {};
  const put = (ids: string[], status: ReportedStatus): void => {
    for (const id of ids) record(results, id, status);
  };
  let previous: string[] | undefined;
  let pending: string[] | undefined;
  for (const line of logLines(log)) {
    const header = DETAIL_HEADER.exec(line);
    const failedIds = header ? idsOf(header[1]!) : undefined;
    if (failedIds) {
      put(failedIds, 'failed');
      previous = pending = undefined;
      continue;
    }
    const sep = line.endsWith(' ...') ? line.length - 4 : line.lastIndexOf(' ... ');
    if (sep >= 0) {
      // The name line itself, or a docstring line under the name line before it.
      const ids = idsOf(line.slice(0, sep)) ?? previous;
      const status = statusOf(line.slice(sep + 5));
      if (ids && status) put(ids, status);
      pending = ids && !status ? ids : undefined;
      previous = undefined;
      continue;
    }
    const status = pending && statusOf(line);
    if (pending && status) {
      put(pending, status);
      pending = undefined;
    }
    previous = idsOf(line);
  }
  return results;
}
