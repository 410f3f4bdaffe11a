/**
 * Parsers of a test command's console output, one module per runner, as SWE-bench-style
 * harnesses read them: test id → status. Each module's header documents the lines it reads and
 * the shape of its test ids. All of them read the log as a terminal shows it (colours dropped),
 * keep the worst status of a test reported twice, and run in time linear in the log's length.
 */
import type { LogParser } from '../../schema.js';
import { parseCargoTestLog } from './cargo-test.js';
import { parseGoTestLog } from './go-test.js';
import { parseJestLog } from './jest.js';
import type { TestStatuses } from './lines.js';
import { parseMochaLog } from './mocha.js';
import { parsePytestLog } from './pytest.js';
import { parseTapLog } from './tap.js';
import { parseUnittestLog } from './unittest.js';
import { parseVitestLog } from './vitest.js';

export { expectedTestId, isTestId } from './test-ids.js';
export { stripAnsi, type TestStatuses } from './lines.js';

const PARSERS: Record<LogParser, (log: string) => TestStatuses> = {
  pytest: parsePytestLog,
  unittest: parseUnittestLog,
  jest: parseJestLog,
  vitest: parseVitestLog,
  mocha: parseMochaLog,
  tap: parseTapLog,
  'go-test': parseGoTestLog,
  'cargo-test': parseCargoTestLog,
};

export function parseTestLog(parser: LogParser, log: string): TestStatuses {
  return PARSERS[parser](log);
}
