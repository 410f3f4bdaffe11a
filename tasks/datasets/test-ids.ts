/**
 * The shape of a test id as each log parser names tests, checked at load so that a FAIL_TO_PASS
 * entry no parser could ever report fails before the batch, not as a reward of 0 in every
 * episode. A stand-in until the log parsers' own `isTestId` (tasks/reward/log-parsers/) is used.
 *
 * - pytest: a node id, `path/to/test_x.py::Class::test_name[params]`
 * - unittest: `test_name (module.Class)`, `test_name (module.Class.test_name)` or `module.Class.test_name`
 * - go-test: `TestName` or `TestName/subtest` (also Benchmark, Example, Fuzz)
 * - cargo-test: `module::path::test_name`, or a doc test `src/lib.rs - item (line 12)`
 * - jest, vitest, mocha, tap: a test's full title, any text on one line
 */
import type { LogParser } from '../schema.js';

const SHAPES: Record<LogParser, { pattern: RegExp; expected: string }> = {
  pytest: { pattern: /^[^\s:][^\n]*?\.py::[^\n]*\S$/, expected: 'a pytest node id, path/test_x.py::test_name' },
  unittest: {
    pattern: /^(?:\w+ \([\w.]+\)|[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+)$/,
    expected: 'a unittest id, test_name (module.Class) or module.Class.test_name',
  },
  'go-test': {
    pattern: /^(?:Test|Benchmark|Example|Fuzz)[\w]*(?:\/\S+)*$/,
    expected: 'a Go test name, TestName or TestName/subtest',
  },
  'cargo-test': {
    pattern: /^(?:[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*|\S+\.rs - .+ \(line \d+\))$/,
    expected: 'a cargo test path, module::test_name',
  },
  jest: { pattern: /^[^\n]*\S[^\n]*$/, expected: 'a test title on one line' },
  vitest: { pattern: /^[^\n]*\S[^\n]*$/, expected: 'a test title on one line' },
  mocha: { pattern: /^[^\n]*\S[^\n]*$/, expected: 'a test title on one line' },
  tap: { pattern: /^[^\n]*\S[^\n]*$/, expected: 'a test title on one line' },
};

export function isTestId(parser: LogParser, id: string): boolean {
  return SHAPES[parser].pattern.test(id);
}

/** What a test id of `parser` looks like, for error messages. */
export function expectedTestId(parser: LogParser): string {
  return SHAPES[parser].expected;
}
