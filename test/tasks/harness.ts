/**
 * Test helpers for the task pack: copy a task's repository into a scratch git repository, apply
 * patches, run its tests and read per-test outcomes from the runner's own report.
 */
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Task, TestFramework } from '../../tasks/schema.js';

export type Outcome = 'pass' | 'fail' | 'error' | 'skip';

export interface RunResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs a process to completion; a non-zero exit is a result, not an exception. */
export function run(file: string, args: string[], cwd: string, stdin?: string): Promise<RunResult> {
  // The child runs its own test runner: inherited runner settings must not leak into it.
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.NODE_OPTIONS;
  delete env.NODE_TEST_CONTEXT;
  env.PYTHONDONTWRITEBYTECODE = '1';
  return new Promise((resolve, reject) => {
    const child = execFile(
      file,
      args,
      { cwd, env, maxBuffer: 16 * 1024 * 1024, timeout: 60_000 },
      (err, stdout, stderr) => {
        if (err && typeof err.code !== 'number') {
          reject(err);
          return;
        }
        resolve({ exitCode: typeof err?.code === 'number' ? err.code : 0, stdout, stderr });
      },
    );
    // A child may exit without reading its input; its exit code reports that, not EPIPE.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(stdin ?? '');
  });
}

const GIT = [
  '-c',
  'user.name=test',
  '-c',
  'user.email=test@example.invalid',
  '-c',
  'core.autocrlf=false',
];

/** A scratch copy of the task's repository as a single-commit git repository, like a sandbox's. */
export async function checkout(task: Task): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `task-${task.instance_id}-`));
  await cp(task.workspace.path, dir, { recursive: true });
  for (const args of [
    ['init', '-q'],
    ['add', '-A'],
    ['commit', '-qm', 'base'],
  ]) {
    const result = await run('git', [...GIT, ...args], dir);
    if (result.exitCode !== 0) throw new Error(`git ${args.join(' ')}: ${result.stderr}`);
  }
  return dir;
}

export async function gitApply(dir: string, patch: string): Promise<void> {
  const result = await run('git', [...GIT, 'apply', '-'], dir, patch);
  if (result.exitCode !== 0) throw new Error(`git apply failed: ${result.stderr}`);
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

/** Per-test outcomes keyed by the test id conventions of tasks/schema.ts. */
export async function runTests(
  dir: string,
  framework: TestFramework,
): Promise<Map<string, Outcome>> {
  const scratch = await mkdtemp(join(tmpdir(), 'task-report-'));
  try {
    return framework === 'node-test'
      ? await runNodeTests(dir, scratch)
      : await runUnittest(dir, scratch);
  } finally {
    await removeDir(scratch);
  }
}

async function runNodeTests(dir: string, scratch: string): Promise<Map<string, Outcome>> {
  const report = join(scratch, 'junit.xml');
  const result = await run(
    process.execPath,
    ['--test', '--test-reporter=junit', `--test-reporter-destination=${report}`],
    dir,
  );
  const xml = await readFile(report, 'utf8').catch(() => {
    throw new Error(`node --test wrote no report (exit ${result.exitCode}): ${result.stderr}`);
  });
  return parseJunit(xml);
}

const TAG = /<(\/?)(testsuite|testcase)((?:\s+[\w:-]+="[^"]*")*)\s*(\/?)>/g;

/**
 * Node 20's junit reporter puts top-level tests directly under <testsuites>, one <testsuite> per
 * describe() (nested as written, no per-file level), and marks failures with a <failure> child.
 */
export function parseJunit(xml: string): Map<string, Outcome> {
  const outcomes = new Map<string, Outcome>();
  const suites: string[] = [];
  let open: { id: string; bodyStart: number } | undefined;
  for (const match of xml.matchAll(TAG)) {
    const [tag, closing, kind, attrs = '', selfClosing] = match;
    const name = decodeXml(/\bname="([^"]*)"/.exec(attrs)?.[1] ?? '');
    if (kind === 'testsuite') {
      if (closing) suites.pop();
      else if (!selfClosing) suites.push(name);
    } else if (closing && open) {
      const body = xml.slice(open.bodyStart, match.index);
      outcomes.set(
        open.id,
        /<failure\b/.test(body) ? 'fail' : /<skipped\b/.test(body) ? 'skip' : 'pass',
      );
      open = undefined;
    } else if (!closing) {
      const id = [...suites, name].join(' > ');
      if (selfClosing) outcomes.set(id, 'pass');
      else open = { id, bodyStart: match.index + tag.length };
    }
  }
  return outcomes;
}

function decodeXml(text: string): string {
  const entities: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };
  return text.replace(/&(lt|gt|amp|quot|apos);/g, (_, entity: string) => entities[entity] ?? '');
}

/** Records each test's outcome under its unittest id, as `unittest discover -s tests -t .` names it. */
const UNITTEST_RUNNER = `
import json, sys, unittest

class Recorder(unittest.TextTestResult):
    outcomes = {}

    def addSuccess(self, test):
        super().addSuccess(test)
        Recorder.outcomes[test.id()] = "pass"

    def addFailure(self, test, err):
        super().addFailure(test, err)
        Recorder.outcomes[test.id()] = "fail"

    def addError(self, test, err):
        super().addError(test, err)
        Recorder.outcomes[test.id()] = "error"

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        Recorder.outcomes[test.id()] = "skip"

suite = unittest.defaultTestLoader.discover("tests", top_level_dir=".")
unittest.TextTestRunner(stream=sys.stderr, resultclass=Recorder, verbosity=0).run(suite)
json.dump(Recorder.outcomes, sys.stdout)
`;

async function runUnittest(dir: string, scratch: string): Promise<Map<string, Outcome>> {
  const runner = join(scratch, 'runner.py');
  await writeFile(runner, UNITTEST_RUNNER);
  const result = await run('python3', [runner], dir);
  try {
    return new Map(Object.entries(JSON.parse(result.stdout) as Record<string, Outcome>));
  } catch {
    throw new Error(`unittest runner failed (exit ${result.exitCode}): ${result.stderr}`);
  }
}
