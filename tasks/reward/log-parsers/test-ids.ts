/**
 * The shape of a test id each log parser can produce (see each parser's header), for checks at
 * load time: an id of another shape can never be found in that parser's results, so a task
 * naming one could never be resolved.
 */
import type { LogParser } from '../../schema.js';

/** One line, no surrounding whitespace. */
const ONE_LINE = /^\S(?:[^\n\r]*\S)?$/;

const SHAPES: Record<LogParser, RegExp> = {
  // path::name[::name…], an optional [parameters] part.
  pytest: /^[^\s:[\]][^\s:]*::[^\s:[\]][^:[]*(?:::[^\s:[\]][^:[]*)*(?:\[[^\n\r]*\])?$/,
  // test_method (module.Class) or test_method (module.Class.test_method).
  unittest: /^[A-Za-z_]\w* \([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\)$/,
  jest: ONE_LINE,
  vitest: ONE_LINE,
  mocha: ONE_LINE,
  tap: ONE_LINE,
  // TestX, ExampleX, FuzzX, subtests after "/", no spaces.
  'go-test': /^(?:Test|Example|Fuzz|Benchmark)[^\s/]*(?:\/\S*)?$/,
  // a::b::name, or a doc test: path - item (line N).
  'cargo-test': /^(?:[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*|\S+ - [^\n\r]+ \(line \d+\))$/,
};

/** What each parser's ids look like, for people reading a load error. */
const EXPECTED: Record<LogParser, string> = {
  pytest: 'a pytest node id, path/test_x.py::test_name[params]',
  unittest: 'a unittest id, test_name (module.Class)',
  jest: 'a test title on one line',
  vitest: 'a test title on one line',
  mocha: 'a test title on one line',
  tap: 'a test title on one line',
  'go-test': 'a Go test name, TestName or TestName/subtest',
  'cargo-test': 'a cargo test path, module::test_name',
};

export function isTestId(parser: LogParser, id: string): boolean {
  return SHAPES[parser].test(id);
}

/** What a test id of `parser` looks like, for error messages. */
export function expectedTestId(parser: LogParser): string {
  return EXPECTED[parser];
}
