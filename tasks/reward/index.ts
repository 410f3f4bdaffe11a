/**
 * Scoring an episode: `evaluateReward` runs the task's reward in a sandbox of its own, from the
 * task's image, and returns a RewardResult. Tests rewards (tests-reward.ts) run the hidden tests
 * with canaries and read a runner's report or a test command's console output; script rewards
 * (script-reward.ts) run a verifier that writes the reward.
 */
import { evaluateScriptReward } from './script-reward.js';
import { evaluateTestsReward } from './tests-reward.js';
import type { RewardDeps, RewardInput, RewardResult } from './result.js';

export { canaryTargets, makeCanary, type Canary } from './canary.js';
export { canaryPlanOf, type CanaryPlan } from './canary-plan.js';
export { compiledCanaryTargets, makeCompiledCanary } from './compiled-canary.js';
export { isTestPath, pathsOf, splitDiff, stripTestChanges, type DiffSection } from './diff.js';
export { JUnitParseError, parseJUnit, parsePytestJUnit } from './junit.js';
export { isTestId, parseTestLog, stripAnsi, type TestStatuses } from './log-parsers/index.js';
export {
  parseReport,
  parseUnittestJson,
  parseJestJson,
  parseMochaJson,
  parseVitestJson,
  ReportParseError,
  type ReportedStatus,
} from './report.js';
export {
  RewardSandboxError,
  type RewardDeps,
  type RewardInput,
  type RewardReason,
  type RewardResult,
  type TestOutcome,
} from './result.js';
export {
  DEFAULT_TEST_COMMANDS,
  NODE_MODULES_MOUNT,
  REPORT_PATHS,
  RUNNER_MOUNT,
  JEST_CACHE_DIR,
  rewardMounts,
  runnerMounts,
  TEST_FILES_ENV,
} from './runners.js';
export { parseRewardFile, VERIFIER_MOUNT } from './script-reward.js';
export { MAX_TEST_OUTPUT_BYTES } from './test-run.js';
export {
  MAX_CHANGED_PATHS,
  MAX_DIFF_BYTES,
  workspaceDiff,
  WorkspaceDiffError,
  type WorkspaceChanges,
} from './workspace-diff.js';

export async function evaluateReward(deps: RewardDeps, input: RewardInput): Promise<RewardResult> {
  const { reward } = input.task;
  return reward.kind === 'script'
    ? evaluateScriptReward(deps, input, reward)
    : evaluateTestsReward(deps, input);
}
