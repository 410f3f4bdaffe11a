/**
 * Log parser names as SWE-bench-style datasets write them (function names of SWE-bench 5.x's
 * harness and SWE-rebench's log_parsers, e.g. `parse_log_pytest`), onto ours. Our own names are
 * taken as they are. The generic JS parsers (`parse_log_js*`) and the other languages' runners
 * have no match here.
 */
import { LogParserSchema, type LogParser } from '../schema.js';

const NAMES: Record<string, LogParser> = {
  parse_log_pytest: 'pytest',
  parse_log_pytest_v2: 'pytest',
  parse_log_pytest_options: 'pytest',
  parse_log_unittest: 'unittest',
  parse_log_jest: 'jest',
  parse_log_jest_json: 'jest',
  parse_log_vitest: 'vitest',
  parse_log_mocha: 'mocha',
  parse_log_mocha_v2: 'mocha',
  parse_log_tap: 'tap',
  parse_log_gotest: 'go-test',
  parse_log_go_test: 'go-test',
  parse_log_cargo: 'cargo-test',
};

/** Our parser for a dataset's parser name, or undefined when there is none. */
export function logParserOf(name: string): LogParser | undefined {
  const own = LogParserSchema.safeParse(name);
  return own.success ? own.data : NAMES[name];
}

/** The names `logParserOf` knows, for error messages. */
export function knownParserNames(): string[] {
  return [...LogParserSchema.options, ...Object.keys(NAMES)];
}
