/**
 * Running a task's tests in the reward sandbox and reading what they reported: the runner's own
 * report file (`test_framework`), or the console output of `test_command` read by the task's log
 * parser (`log_parser`).
 */
import type { SandboxProvider } from '../../sandbox/provider.js';
import type { LogParser, Task, TestFramework } from '../schema.js';
import { parseTestLog } from './log-parsers/index.js';
import { parseReport, type ReportedStatus } from './report.js';
import { DETAIL_BYTES, tail } from './result.js';
import { DEFAULT_TEST_COMMANDS, REPORT_PATHS, TEST_FILES_ENV } from './runners.js';

/** The largest report, or console output, read; more is `no_report`. */
export const MAX_TEST_OUTPUT_BYTES = 32 * 1024 * 1024;

export type TestRun =
  | { kind: 'timeout'; detail: string }
  | { kind: 'no_report'; detail: string }
  | { kind: 'reported'; reported: Record<string, ReportedStatus>; detail: string };

/** Each step in a subshell of its own, stopping at the first that fails. */
function steps(commands: string[]): string {
  return `(\n${commands.map((s) => `(\n${s}\n)`).join(' &&\n')}\n)`;
}

/** Setup commands, then the tests; test output goes to a log, the report alone to stdout. */
function reportScript(task: Task, framework: TestFramework): string {
  const log = '/tmp/reward-tests.log';
  return [
    'rm -f -- "$REWARD_REPORT"',
    `${steps([...task.setup, task.test_command ?? DEFAULT_TEST_COMMANDS[framework]])} >${log} 2>&1`,
    `echo "tests exited with status $?" >>${log}`,
    `tail -c ${DETAIL_BYTES} ${log} >&2`,
    'cat -- "$REWARD_REPORT" 2>/dev/null',
    'exit 0',
  ].join('\n');
}

/**
 * Setup commands, then the test command, stdout and stderr together as the run's stdout: a pipe
 * the code under test can add to but, unlike a log file, not rewrite.
 */
function logScript(task: Task, command: string): string {
  return [
    `${steps([...task.setup, command])} 2>&1`,
    'echo "tests exited with status $?"',
    'exit 0',
  ].join('\n');
}

export async function runTests(
  provider: SandboxProvider,
  id: string,
  task: Task,
  testFiles: string[],
): Promise<TestRun> {
  const timeout = `tests did not finish in ${task.timeouts.test_s} s`;
  const options = {
    timeoutMs: task.timeouts.test_s * 1000,
    maxOutputBytes: MAX_TEST_OUTPUT_BYTES,
  };
  const framework = task.test_framework;
  if (framework) {
    const run = await provider.exec(
      id,
      { shell: reportScript(task, framework) },
      {
        ...options,
        env: { REWARD_REPORT: REPORT_PATHS[framework], [TEST_FILES_ENV]: testFiles.join('\n') },
      },
    );
    if (run.timedOut) return { kind: 'timeout', detail: timeout };
    if (run.stdout === '' || run.truncated) return { kind: 'no_report', detail: run.stderr };
    try {
      return { kind: 'reported', reported: parseReport(framework, run.stdout), detail: run.stderr };
    } catch (err) {
      return { kind: 'no_report', detail: `${(err as Error).message}\n${run.stderr}` };
    }
  }
  const parser: LogParser | undefined = task.log_parser;
  if (!parser || !task.test_command)
    return { kind: 'no_report', detail: 'the task names neither test_framework nor log_parser' };
  const run = await provider.exec(
    id,
    { shell: logScript(task, task.test_command) },
    { ...options, env: { [TEST_FILES_ENV]: testFiles.join('\n') } },
  );
  if (run.timedOut) return { kind: 'timeout', detail: `${timeout}\n${tail(run.stdout)}` };
  if (run.truncated)
    return { kind: 'no_report', detail: `test output over ${MAX_TEST_OUTPUT_BYTES} bytes` };
  const reported = parseTestLog(parser, run.stdout);
  if (Object.keys(reported).length === 0) {
    return {
      kind: 'no_report',
      detail: `no ${parser} test results in the output\n${tail(run.stdout)}`,
    };
  }
  return { kind: 'reported', reported, detail: tail(run.stdout) };
}
