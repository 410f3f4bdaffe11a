/**
 * How each test framework runs in the reward sandbox: its default command, where its report goes,
 * and what it needs mounted read-only. The reward scripts live at `RUNNER_MOUNT`; vitest, mocha
 * and jest come from this package's own node_modules, mounted at `/node_modules` where Node's
 * resolution from `/workspace` finds it (`import { test } from 'vitest'` works without installing
 * anything).
 */
import { realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LogParser, Task, TestFramework } from '../schema.js';

/** The sandbox path the runner scripts are mounted at, read-only. */
export const RUNNER_MOUNT = '/opt/agent-rollout/reward';
const RUNNERS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'runners');

/** Where the JS runners' node_modules is mounted, read-only. */
export const NODE_MODULES_MOUNT = '/node_modules';

/**
 * Where the runner writes its report; a task's own `test_command` must write it there too, and
 * stream its results as the default commands do. The path is also in the command's environment
 * as `$REWARD_REPORT`.
 */
export const REPORT_PATHS: Record<TestFramework, string> = {
  pytest: '/tmp/reward-report.xml',
  unittest: '/tmp/reward-report.json',
  vitest: '/tmp/reward-report.json',
  'node-test': '/tmp/reward-report.xml',
  mocha: '/tmp/reward-report.json',
  jest: '/tmp/reward-report.json',
};

/**
 * Where jest keeps its cache (haste map, transforms): the only writable place in the reward
 * sandbox besides /workspace, which must stay as the patches left it.
 */
export const JEST_CACHE_DIR = '/tmp/jest-cache';

/**
 * The file descriptor the reward's shell opens on the result stream (test-run.ts); the reporters
 * below write to it (runners/stream-fd.cjs, runners/agent_rollout_stream.py).
 */
export const STREAM_FD = 3;

/**
 * Preloaded into the JS runners' main process, before any configuration or code under test, so
 * that the stream's write primitive is captured first.
 */
const NODE_STREAM = `node --require ${RUNNER_MOUNT}/stream-fd.cjs`;

/** A shell word in single quotes. */
function quoted(word: string): string {
  return `'${word.replaceAll("'", "'\\''")}'`;
}

/**
 * The default test command of each framework. Each runs with the reward's stream reporter on
 * the command line (runners/), beside the report. Python runs with `-P` so that nothing in
 * /workspace can shadow the runner's own modules (a `pytest.py` or `unittest/` planted at the top
 * level) before it starts; the stream plugin comes from the runner mount (`PYTHONPATH`). pytest
 * goes on past a module that fails to import, so the other modules' tests are reported. Every
 * runner runs the repository's whole suite as its configuration says (the agent's changes to
 * that configuration are dropped, so the base repository's is trusted); mocha also loads the
 * hidden test files (`testFiles`) with `--file`, in case its spec globs miss them (positional
 * files would replace mocha's default spec; `--file` adds to it, and a file in both runs once). mocha's `--exit` and jest's
 * `--forceExit` keep a handle left open by the code under test from holding the run until the
 * time limit.
 */
export function defaultTestCommand(framework: TestFramework, testFiles: string[]): string {
  switch (framework) {
    case 'pytest':
      return `PYTHONPATH=${RUNNER_MOUNT}\${PYTHONPATH:+:$PYTHONPATH} python3 -P -m pytest -p agent_rollout_pytest -p no:cacheprovider -o junit_family=xunit1 --continue-on-collection-errors --junitxml="$REWARD_REPORT" -q`;
    case 'unittest':
      return `python3 -P ${RUNNER_MOUNT}/unittest_json.py "$REWARD_REPORT"`;
    case 'vitest':
      return `${NODE_STREAM} ${NODE_MODULES_MOUNT}/vitest/vitest.mjs run --reporter=default --reporter=json --outputFile.json="$REWARD_REPORT" --reporter=${RUNNER_MOUNT}/vitest-stream.mjs`;
    case 'node-test':
      return `node --test --test-reporter=junit --test-reporter-destination="$REWARD_REPORT" --test-reporter=${RUNNER_MOUNT}/node-test-stream.mjs --test-reporter-destination=stdout`;
    case 'mocha':
      return `${NODE_STREAM} ${NODE_MODULES_MOUNT}/mocha/bin/mocha.js --exit --reporter ${RUNNER_MOUNT}/mocha-stream.cjs --reporter-option output="$REWARD_REPORT" ${testFiles.map((f) => `--file ${quoted(f)}`).join(' ')}`;
    case 'jest':
      return `${NODE_STREAM} ${NODE_MODULES_MOUNT}/jest/bin/jest.js --ci --no-watchman --cacheDirectory=${JEST_CACHE_DIR} --json --outputFile="$REWARD_REPORT" --reporters=default --reporters=${RUNNER_MOUNT}/jest-stream.cjs --forceExit`;
  }
}

/** The host node_modules that holds the JS runners (a symlinked node_modules is followed). */
function runnersNodeModules(): string {
  const require = createRequire(import.meta.url);
  return realpathSync(dirname(dirname(require.resolve('vitest/package.json'))));
}

/** The runners (report frameworks and log parsers alike) that come from this package's node_modules. */
const NODE_MODULES_RUNNERS: ReadonlySet<TestFramework | LogParser> = new Set([
  'vitest',
  'mocha',
  'jest',
]);

type Mount = { hostPath: string; sandboxPath: string };

/**
 * Read-only mounts a task's tests need, in the agent's sandbox and the reward's: for vitest, mocha
 * and jest (its `test_framework` or its `log_parser`) this package's runners at
 * `NODE_MODULES_MOUNT`, for an image that has none; Node resolves a repository's own
 * `/workspace/node_modules` first, so its pinned runner wins where it has one.
 */
export function runnerMounts(task: Pick<Task, 'test_framework' | 'log_parser'>): Mount[] {
  const runner = task.test_framework ?? task.log_parser;
  return runner !== undefined && NODE_MODULES_RUNNERS.has(runner)
    ? [{ hostPath: runnersNodeModules(), sandboxPath: NODE_MODULES_MOUNT }]
    : [];
}

/** Mounts of the reward sandbox: the runner scripts for a report framework, and `runnerMounts`. */
export function rewardMounts(task: Pick<Task, 'test_framework' | 'log_parser'>): Mount[] {
  const scripts = task.test_framework ? [{ hostPath: RUNNERS_DIR, sandboxPath: RUNNER_MOUNT }] : [];
  return [...scripts, ...runnerMounts(task)];
}
