/**
 * How each test framework runs in the reward sandbox: its default command, where its report goes,
 * and what it needs mounted read-only. The reward scripts live at `RUNNER_MOUNT`; vitest comes
 * from this package's own node_modules, mounted at `/node_modules` where Node's resolution from
 * `/workspace` finds it (`import { test } from 'vitest'` works without installing anything).
 */
import { realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestFramework } from '../schema.js';

/** The sandbox path the runner scripts are mounted at, read-only. */
export const RUNNER_MOUNT = '/opt/agent-rollout/reward';
const RUNNERS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'runners');

/** Where vitest's node_modules is mounted, read-only. */
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
};

/**
 * The default test commands. Python runs with `-P` so that nothing in /workspace can shadow the
 * runner's own modules (a `pytest.py` or `unittest/` planted at the top level) before it starts.
 * pytest goes on past a module that fails to import, so the other modules' tests are reported.
 */
export const DEFAULT_TEST_COMMANDS: Record<TestFramework, string> = {
  pytest:
    'python3 -P -m pytest -p no:cacheprovider -o junit_family=xunit1 --continue-on-collection-errors --junitxml="$REWARD_REPORT" -q',
  unittest: `python3 -P ${RUNNER_MOUNT}/unittest_json.py "$REWARD_REPORT"`,
  vitest: `node ${NODE_MODULES_MOUNT}/vitest/vitest.mjs run --reporter=json --outputFile="$REWARD_REPORT"`,
  'node-test': 'node --test --test-reporter=junit --test-reporter-destination="$REWARD_REPORT"',
};

/** The host node_modules that holds vitest (a symlinked node_modules is followed). */
function vitestNodeModules(): string {
  const require = createRequire(import.meta.url);
  return realpathSync(dirname(dirname(require.resolve('vitest/package.json'))));
}

/** Read-only mounts the framework's tests need, in the agent's sandbox and the reward's. */
export function runnerMounts(
  framework: TestFramework,
): { hostPath: string; sandboxPath: string }[] {
  return framework === 'vitest'
    ? [{ hostPath: vitestNodeModules(), sandboxPath: NODE_MODULES_MOUNT }]
    : [];
}

/** Mounts of the reward sandbox: the runner scripts and the framework's own mounts. */
export function rewardMounts(
  framework: TestFramework,
): { hostPath: string; sandboxPath: string }[] {
  return [{ hostPath: RUNNERS_DIR, sandboxPath: RUNNER_MOUNT }, ...runnerMounts(framework)];
}
