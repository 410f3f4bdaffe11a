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

export function isTestId(parser: LogParser, id: string): boolean {
  return SHAPES[parser].test(id);
}
