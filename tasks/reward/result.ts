/** What a reward evaluation returns and takes, for every kind of task. */
import type { ImageStore } from '../../sandbox/images/types.js';
import type { SandboxProvider } from '../../sandbox/provider.js';
import type { Task } from '../schema.js';
import type { JudgeDeps, JudgeSummary } from './judge/types.js';
import type { ScreenConfig } from './screen/config.js';
import type { ScreenFinding } from './screen/screen.js';

export type RewardReason =
  | 'resolved'
  | 'unresolved'
  | 'patch_failed'
  | 'no_report'
  | 'timeout'
  | 'tampered'
  /** The model judge (a judge reward, or an audit that zeroes) answered twice with nothing readable. */
  | 'judge_unparseable'
  /** The agent's changes are too large to take (workspace-diff.ts); nothing is run. */
  | 'diff_rejected';
export type TestOutcome = 'passed' | 'failed' | 'missing';

export interface RewardResult {
  /**
   * Tests rewards: 1 if resolved, else 0. Script rewards: the number the verifier wrote, in
   * [0, 1] (0 when it wrote none). Judge rewards: the judge's score. 0 when an audit flagged.
   */
  reward: number;
  /** Reward 1. */
  resolved: boolean;
  reason: RewardReason;
  /**
   * Every FAIL_TO_PASS and PASS_TO_PASS test; `missing` = absent from the report or log = not
   * passed. Empty for script rewards.
   */
  tests: Record<string, TestOutcome>;
  /** How many of `tests` passed. */
  passed: number;
  /** How many of `tests` did not pass (failed, skipped or missing). */
  failed: number;
  /**
   * How many canary tests guarded the run (canary.ts): 0 where none could be added (TAP logs,
   * script rewards, tests hidden in the image with no test patch to add them to, a run that
   * stopped before its tests).
   */
  canaries: number;
  durationMs: number;
  /** Why it was not resolved, for people: `git apply` errors or the test output's tail (≤ 2 KB). */
  detail?: string;
  /** Paths of the agent's diff the reward dropped (tests, runner configuration). */
  dropped: string[];
  /**
   * Tests rewards whose tests ran: how many suite-baseline tests (suite-baseline.ts: passed both
   * at the base and with the gold patch, over the whole configured suite) were checked besides
   * `tests`. 0 when the tests did not run, or the baseline is off or could not be made
   * (`suiteSkipped` says why).
   */
  suiteTests?: number;
  /**
   * The first `SUITE_BROKEN_SHOWN` suite-baseline tests that failed or were missing; any makes
   * the reward 0 with reason `unresolved`. A capped list, never the whole suite.
   */
  suiteBroken?: string[];
  /**
   * Why no suite baseline was checked: `off` (`RewardDeps.suiteBaseline`), or the baseline run
   * that gave no tests (timed out, no report, a patch that does not apply); the reward then
   * rests on FAIL_TO_PASS and PASS_TO_PASS alone.
   */
  suiteSkipped?: string;
  /** The model judge's summary: the judge reward's, or the audit's beside a tests or script reward. */
  judge?: JudgeSummary;
  /**
   * What the static screen flagged (tasks/reward/screen/), at most MAX_FINDINGS: present only
   * when it made the episode `tampered`, before any test ran.
   */
  screen?: ScreenFinding[];
}

export interface RewardDeps {
  provider: SandboxProvider;
  /** Where bundles, tarballs and image workspaces are unpacked. Default `defaultWorkspaceCacheDir()`. */
  workspaceCacheDir?: string;
  /** Resolves the task's image (for an `image` workspace). Default none. */
  images?: ImageStore;
  /** Random bytes for the canaries' names and values. Default `crypto.randomBytes`. */
  random?: (bytes: number) => Buffer;
  /**
   * Whether the tests that pass at the base and with the gold patch across the whole configured
   * suite must still pass (suite-baseline.ts), as SWE-bench checks PASS_TO_PASS. Default true.
   */
  suiteBaseline?: boolean;
  /** Where suite baselines are cached. Default `suite-baselines/` under `workspaceCacheDir`. */
  suiteBaselineDir?: string;
  /** The configured engines as a judge reaches them; needed by judge rewards and audits. Default none. */
  judge?: JudgeDeps;
  /** The stack's `reward.screen`; applies together with the task's. Default: on, every rule. */
  screen?: ScreenConfig;
}

export interface RewardInput {
  task: Task;
  /** The agent's changes against the base snapshot, as `workspaceDiff` returns them. */
  agentDiff: string;
  /**
   * Why the agent's changes could not be taken (`WorkspaceChanges.rejected`: too large, too
   * many): the reward is 0 with reason `diff_rejected`, and nothing is run. Default none.
   */
  agentDiffRejected?: string;
  /** Episode id + attempt; the reward sandbox uses `<key>:reward`. */
  idempotencyKey: string;
  /**
   * Extra labels of the reward sandbox; an `episode` label lets the janitor remove it as soon as
   * that episode's workflow closes instead of at its TTL. Default none.
   */
  labels?: Record<string, string>;
}

/** The result for changes that could not be taken: `named` tests all missing, nothing run. */
export function diffRejected(named: string[], detail: string): RewardResult {
  return {
    reward: 0,
    resolved: false,
    reason: 'diff_rejected',
    tests: Object.fromEntries(named.map((n) => [n, 'missing' as const])),
    passed: 0,
    failed: named.length,
    canaries: 0,
    durationMs: 0,
    detail: tail(`agent diff rejected: ${detail}`),
    dropped: [],
  };
}

/** The reward sandbox is not in the state the reward needs (not a git repository, reused). */
export class RewardSandboxError extends Error {
  override name = 'RewardSandboxError';
}

export const DETAIL_BYTES = 2000;
/** How many broken suite-baseline tests a result names (`RewardResult.suiteBroken`). */
export const SUITE_BROKEN_SHOWN = 10;
/** The longest first line `tail` keeps whole. */
const HEADLINE_BYTES = 500;

/**
 * At most about DETAIL_BYTES of `text`: its first line (the reward's own message, when it has
 * one) and the end of the rest (the end of the test output, where runners sum up).
 */
export function tail(text: string): string {
  if (text.length <= DETAIL_BYTES) return text;
  const nl = text.indexOf('\n');
  const head = nl >= 0 && nl <= HEADLINE_BYTES ? text.slice(0, nl + 1) : '';
  return `${head}…${text.slice(-(DETAIL_BYTES - head.length))}`;
}
