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
 * Where the runner writes its report; a task's own `test_command` must write it there too. The
 * path is also in the command's environment as `$REWARD_REPORT`.
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
 * The environment variable that holds the hidden test files the reward runs (the files of the
 * test patch the runner would run, with the canaries appended, or the canary file the reward
 * created), one path per line, relative to /workspace. A task's own `test_command` may use it.
 */
export const TEST_FILES_ENV = 'REWARD_TEST_FILES';

/**
 * Where jest keeps its cache (haste map, transforms): the only writable place in the reward
 * sandbox besides /workspace, which must stay as the patches left it.
 */
export const JEST_CACHE_DIR = '/tmp/jest-cache';

/**
 * jest's whole configuration, passed on the command line so that nothing in the workspace
 * (`jest.config.*`, `package.json#jest`) is read. Test files are the paths given, of any JS or TS
 * name; babel-jest (jest's default transform) still reads the repository's own babel config, which
 * TypeScript or ES module tests need (the agent's changes to it are dropped).
 */
const JEST_CONFIG = JSON.stringify({
  rootDir: '/workspace',
  cacheDirectory: JEST_CACHE_DIR,
  watchman: false,
  testMatch: ['**/*.?([cm])[jt]s?(x)'],
  testPathIgnorePatterns: ['/node_modules/'],
});

/**
 * Splits the newline-separated `$REWARD_TEST_FILES` into one argument per path, unglobbed (the
 * step runs in its own subshell, so IFS and noglob do not leak).
 */
const TEST_FILE_ARGS = "set -f; IFS='\n'; ";

/**
 * The default test commands. Python runs with `-P` so that nothing in /workspace can shadow the
 * runner's own modules (a `pytest.py` or `unittest/` planted at the top level) before it starts.
 * pytest goes on past a module that fails to import, so the other modules' tests are reported.
 * pytest, unittest, vitest and node:test run the whole suite; mocha and jest run only the hidden
 * test files, `$REWARD_TEST_FILES` (see `TEST_FILES_ENV`), with their configuration files and
 * `package.json` keys ignored. mocha's `--exit` and jest's `--forceExit` keep a handle left open by
 * the code under test from holding the run until the time limit.
 */
export const DEFAULT_TEST_COMMANDS: Record<TestFramework, string> = {
  pytest:
    'python3 -P -m pytest -p no:cacheprovider -o junit_family=xunit1 --continue-on-collection-errors --junitxml="$REWARD_REPORT" -q',
  unittest: `python3 -P ${RUNNER_MOUNT}/unittest_json.py "$REWARD_REPORT"`,
  vitest: `node ${NODE_MODULES_MOUNT}/vitest/vitest.mjs run --reporter=json --outputFile="$REWARD_REPORT"`,
  'node-test': 'node --test --test-reporter=junit --test-reporter-destination="$REWARD_REPORT"',
  mocha: `${TEST_FILE_ARGS}node ${NODE_MODULES_MOUNT}/mocha/bin/mocha.js --no-config --no-package --exit --reporter json --reporter-option output="$REWARD_REPORT" -- $REWARD_TEST_FILES`,
  jest: `${TEST_FILE_ARGS}node ${NODE_MODULES_MOUNT}/jest/bin/jest.js --ci --no-watchman --config '${JEST_CONFIG}' --rootDir /workspace --json --outputFile="$REWARD_REPORT" --forceExit --runTestsByPath -- $REWARD_TEST_FILES`,
};

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
