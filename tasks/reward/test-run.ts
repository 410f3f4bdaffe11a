/**
 * Running a task's tests in the reward sandbox and reading what they reported: the runner's own
 * report file checked against the result stream (`test_framework`), or the console output of
 * `test_command` read by the task's log parser (`log_parser`).
 */
import { randomBytes } from 'node:crypto';
import type { ExecOptions, SandboxProvider } from '../../sandbox/provider.js';
import type { LogParser, Task, TestFramework } from '../schema.js';
import { parseTestLog } from './log-parsers/index.js';
import { parseReport, type ReportedStatus } from './report.js';
import { DETAIL_BYTES, tail } from './result.js';
import { defaultTestCommand, REPORT_PATHS, STREAM_FD } from './runners.js';
import { parseStream, tamperingEvidence } from './stream.js';

/** The largest report, or console output, read; more is `no_report`. */
export const MAX_TEST_OUTPUT_BYTES = 32 * 1024 * 1024;

/**
 * `tampered`: the report disagrees with the result stream (stream.ts); `detail` names how, and
 * `reported` is what the report claimed.
 */
export type TestRun =
  | { kind: 'timeout'; detail: string }
  | { kind: 'no_report'; detail: string }
  | { kind: 'reported' | 'tampered'; reported: Record<string, ReportedStatus>; detail: string };

/** Each step in a subshell of its own, stopping at the first that fails. */
function steps(commands: string[]): string {
  return `(\n${commands.map((s) => `(\n${s}\n)`).join(' &&\n')}\n)`;
}

/**
 * The report script. The exec's stdout carries the result stream, then the report, then a
 * trailer line; stderr carries the tail of the test output.
 *
 * - fd `STREAM_FD` is opened on stdout before the tests start, for the reporters; the tests' own
 *   stdout and stderr go to a log, so what the code under test prints never reaches the stream.
 * - When the test command exits, every other process of this exec (its own pid namespace) is
 *   killed, a writer left behind included, and only then is the report read: an edit made
 *   before the kill disagrees with the stream, one after it cannot happen.
 * - The report follows, then `<mark> <bytes>` with the report's size (-1 when there is none).
 *   The mark is random per evaluation and comes on stdin, which the tests never see, and nothing
 *   of the code under test is left to write after it.
 */
function reportScript(task: Task, framework: TestFramework, testFiles: string[]): string {
  const log = '/tmp/reward-tests.log';
  const command = task.test_command ?? defaultTestCommand(framework, testFiles);
  return [
    'IFS= read -r mark',
    'rm -f -- "$REWARD_REPORT"',
    `exec ${STREAM_FD}>&1`,
    `${steps([...task.setup, command])} </dev/null >${log} 2>&1`,
    `echo "tests exited with status $?" >>${log}`,
    `exec ${STREAM_FD}>&-`,
    'kill -KILL -1 2>/dev/null',
    `tail -c ${DETAIL_BYTES} ${log} >&2`,
    'if [ -f "$REWARD_REPORT" ]; then size=$(wc -c <"$REWARD_REPORT"); cat -- "$REWARD_REPORT"; else size=-1; fi',
    `printf '\n%s %d\n' "$mark" "$size"`,
    'exit 0',
  ].join('\n');
}

const timeoutDetail = (task: Task): string => `tests did not finish in ${task.timeouts.test_s} s`;

/** The exec's stdout split at the trailer: the stream and the report (undefined when none). */
function splitOutput(
  stdout: string,
  mark: string,
): { stream: string; report: string | undefined } | undefined {
  const bytes = Buffer.from(stdout, 'utf8');
  const end = bytes.length - 1;
  if (bytes[end] !== 0x0a) return undefined;
  const lineStart = bytes.lastIndexOf(0x0a, end - 1);
  const trailer = /^(\S+) (-1|\d+)$/.exec(bytes.subarray(lineStart + 1, end).toString('utf8'));
  if (lineStart < 0 || !trailer || trailer[1] !== mark) return undefined;
  const size = Number(trailer[2]);
  const reportStart = lineStart - Math.max(size, 0);
  if (reportStart < 0) return undefined;
  return {
    stream: bytes.subarray(0, reportStart).toString('utf8'),
    report: size < 0 ? undefined : bytes.subarray(reportStart, lineStart).toString('utf8'),
  };
}

async function runReportTests(
  provider: SandboxProvider,
  id: string,
  task: Task,
  framework: TestFramework,
  testFiles: string[],
  options: ExecOptions,
): Promise<TestRun> {
  const mark = randomBytes(16).toString('hex');
  const run = await provider.exec(
    id,
    { shell: reportScript(task, framework, testFiles) },
    { ...options, stdin: `${mark}\n`, env: { REWARD_REPORT: REPORT_PATHS[framework] } },
  );
  if (run.timedOut) return { kind: 'timeout', detail: timeoutDetail(task) };
  if (run.truncated)
    return {
      kind: 'no_report',
      detail: `test output over ${MAX_TEST_OUTPUT_BYTES} bytes\n${run.stderr}`,
    };
  const output = splitOutput(run.stdout, mark);
  if (!output)
    return { kind: 'no_report', detail: `the report script did not finish\n${run.stderr}` };
  if (output.report === undefined || output.report === '')
    return { kind: 'no_report', detail: run.stderr };
  let reported: Record<string, ReportedStatus>;
  try {
    reported = parseReport(framework, output.report);
  } catch (err) {
    return { kind: 'no_report', detail: `${(err as Error).message}\n${run.stderr}` };
  }
  // A task's own test_command need not load the streaming reporters: one that streamed nothing
  // is read from its report alone (the default commands, which always stream, are checked).
  if (task.test_command !== undefined && output.stream === '')
    return { kind: 'reported', reported, detail: run.stderr };
  const evidence = tamperingEvidence(parseStream(output.stream), reported);
  if (evidence) return { kind: 'tampered', reported, detail: `${evidence}\n${run.stderr}` };
  return { kind: 'reported', reported, detail: run.stderr };
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
  const options = {
    timeoutMs: task.timeouts.test_s * 1000,
    maxOutputBytes: MAX_TEST_OUTPUT_BYTES,
  };
  const framework = task.test_framework;
  if (framework) return runReportTests(provider, id, task, framework, testFiles, options);
  const parser: LogParser | undefined = task.log_parser;
  if (!parser || !task.test_command)
    return { kind: 'no_report', detail: 'the task names neither test_framework nor log_parser' };
  const run = await provider.exec(id, { shell: logScript(task, task.test_command) }, options);
  if (run.timedOut)
    return { kind: 'timeout', detail: `${timeoutDetail(task)}\n${tail(run.stdout)}` };
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
