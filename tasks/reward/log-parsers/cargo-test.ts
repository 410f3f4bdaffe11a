/**
 * `cargo test` (libtest) output. Test ids are libtest's names: the module path of the test in its
 * crate, `tests::adds` or `adds` for an integration test at its file's top level, and for a doc
 * test `src/lib.rs - add (line 3)`. Read from `test <id> ... ok|FAILED|ignored[, reason]` lines;
 * libtest's ` - should panic` suffix is not part of the id. Ignored tests count as skipped.
 */
import type { ReportedStatus } from '../junit.js';
import { logLines, record, type TestStatuses } from './lines.js';

const SHOULD_PANIC = ' - should panic';

function statusOf(text: string): ReportedStatus | undefined {
  if (text === 'ok') return 'passed';
  if (text === 'FAILED') return 'failed';
  if (text === 'ignored' || text.startsWith('ignored, ')) return 'skipped';
  return undefined;
}

export function parseCargoTestLog(log: string): TestStatuses {
  const results: TestStatuses = {};
  for (const line of logLines(log)) {
    if (!line.startsWith('test ')) continue;
    const sep = line.lastIndexOf(' ... ');
    if (sep < 5) continue;
    const status = statusOf(line.slice(sep + 5));
    if (!status) continue;
    const name = line.slice(5, sep);
    record(
      results,
      name.endsWith(SHOULD_PANIC) ? name.slice(0, -SHOULD_PANIC.length) : name,
      status,
    );
  }
  return results;
}
