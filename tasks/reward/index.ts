/**
 * Scoring an episode: `evaluateReward` runs the task's reward in a sandbox of its own, from the
 * task's image, and returns a RewardResult. Tests rewards (tests-reward.ts) run the hidden tests
 * with canaries and read a runner's report or a test command's console output; script rewards
 * (script-reward.ts) run a verifier that writes the reward; judge rewards (judge-reward.ts) ask a
 * model through the configured engines. A tests or script reward with an `audit` is then audited
 * by a model judge (judge/audit.ts), which can zero it.
 */
import { auditReward } from './judge/audit.js';
import { evaluateJudgeReward } from './judge-reward.js';
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
  defaultTestCommand,
  NODE_MODULES_MOUNT,
  REPORT_PATHS,
  RUNNER_MOUNT,
  JEST_CACHE_DIR,
  rewardMounts,
  runnerMounts,
  STREAM_FD,
} from './runners.js';
export { activeRules, type ScreenConfig } from './screen/config.js';
export { screenDiff, type ScreenFinding } from './screen/screen.js';
export { parseRewardFile, VERIFIER_MOUNT } from './script-reward.js';
export { AUDIT_RUBRIC, JUDGE_HEADER } from './judge/prompt.js';
export {
  JudgeConfigError,
  JudgeUnavailableError,
  type JudgeCallRequest,
  type JudgeCallResult,
  type JudgeDeps,
  type JudgeEngine,
  type JudgePrices,
  type JudgeSummary,
} from './judge/types.js';
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
  if (reward.kind === 'judge') return evaluateJudgeReward(deps, input, reward);
  const result =
    reward.kind === 'script'
      ? await evaluateScriptReward(deps, input, reward)
      : await evaluateTestsReward(deps, input);
  return reward.audit ? auditReward(deps, input, reward.audit, result) : result;
}
