/**
 * The test-based reward (../../../shared/specs/sandbox.md, "Rewards that resist hacking"): in a
 * fresh sandbox from the task's image and snapshot, apply the agent's diff minus tests and
 * test-runner configuration (the protected-path rule in diff.ts), then the hidden test patch,
 * then canary tests that must fail (canary-plan.ts), run the tests, and read the runner's own
 * report, checked against the results streamed as the tests ran, or the test command's console
 * output (test-run.ts). Besides FAIL_TO_PASS and
 * PASS_TO_PASS, the tests of the task's suite baseline (suite-baseline.ts: passing at the base and
 * with the gold patch over the whole configured suite) must pass; its runs go alongside the
 * agent's on a task's first evaluation on a host.
 *
 * What stays out of the agent's reach: the hidden tests, the gold patch and the expected results
 * never enter any sandbox but the reward's; the runner scripts are mounted read-only; a report is
 * read from the reward sandbox's own /tmp, which the agent's diff cannot touch, and console
 * output from a pipe. The tests do run the agent's code, which can write anything that process
 * can, print forged result lines included: a forged pass cannot hide the runner's real failure
 * of the same test (the worst status is kept), and output cut short leaves canaries missing.
 *
 * A task whose tests are hidden in its image (`environment.hidden_paths`, R2E-Gym) has no test
 * patch: nothing is applied, the agent's diff loses every section under a hidden workspace path,
 * and no canaries are added (canaries go into test-patch files), which the result records as
 * `canaries: 0`.
 *
 * Before all that, the static screen (screen/screen.ts) reads the diff to be applied: non-test
 * code reaching into the test infrastructure makes the episode `tampered`, with the evidence.
 */
import { randomBytes } from 'node:crypto';
import { hiddenPathsOf } from '../task-sandbox.js';
import { canaryStatuses, rewardCanaryPlan } from './canary-plan.js';
import { pathsOf, stripTestChanges } from './diff.js';
import type { ReportedStatus } from './report.js';
import {
  SUITE_BROKEN_SHOWN,
  diffRejected,
  tail,
  type RewardDeps,
  type RewardInput,
  type RewardReason,
  type RewardResult,
  type TestOutcome,
} from './result.js';
import { rewardMounts } from './runners.js';
import { addCanaries, applyPatch, rewardSandboxSpec, withRewardSandbox } from './sandbox-steps.js';
import { activeRules } from './screen/config.js';
import { MAX_FINDINGS, screenDiff, screenEvidence } from './screen/screen.js';
import { brokenSuiteTests, suiteBaselineOf, type SuiteBaseline } from './suite-baseline.js';
import { runTests } from './test-run.js';

export async function evaluateTestsReward(
  deps: RewardDeps,
  input: RewardInput,
): Promise<RewardResult> {
  const startedAt = performance.now();
  const { provider } = deps;
  const random = deps.random ?? randomBytes;
  const { task } = input;
  const named = [...new Set([...task.FAIL_TO_PASS, ...task.PASS_TO_PASS])];
  if (input.agentDiffRejected) return diffRejected(named, input.agentDiffRejected);
  const { diff: agentPatch, dropped } = stripTestChanges(
    input.agentDiff,
    pathsOf(task.test_patch),
    hiddenPathsOf(task).inWorkspace,
  );
  let guards = 0;

  /** What the reward sandbox found; `reported` is absent when the tests did not run. */
  type Verdict = {
    reason: RewardReason;
    reported?: Record<string, ReportedStatus>;
    detail?: string;
  };
  const verdict = (
    reason: RewardReason,
    reported?: Record<string, ReportedStatus>,
    detail?: string,
  ): Verdict => ({ reason, ...(reported ? { reported } : {}), ...(detail ? { detail } : {}) });
  const namedPass = (reported: Record<string, ReportedStatus>): boolean =>
    named.every((n) => reported[n] === 'passed');

  const finish = (
    { reason, reported = {}, detail }: Verdict,
    suite: SuiteBaseline | undefined,
  ): RewardResult => {
    const tests: Record<string, TestOutcome> = {};
    for (const name of named) {
      const status = reported[name];
      tests[name] = status === undefined ? 'missing' : status === 'passed' ? 'passed' : 'failed';
    }
    const passed = named.filter((n) => tests[n] === 'passed').length;
    // The suite is checked wherever the tests ran; a broken one fails the task like a named one.
    const ran = reason === 'unresolved' || reason === 'tampered';
    const { checked, broken } =
      suite && ran
        ? brokenSuiteTests(suite, new Set(named), reported)
        : { checked: 0, broken: [] as string[] };
    const resolved = reason === 'unresolved' && passed === named.length && broken.length === 0;
    const shown = broken.slice(0, SUITE_BROKEN_SHOWN);
    const why =
      broken.length > 0
        ? `${broken.length} of ${checked} suite-baseline tests broke: ${shown.slice(0, 3).join(', ')}${broken.length > 3 ? ', …' : ''}\n${detail ?? ''}`
        : detail;
    const skipped = deps.suiteBaseline === false ? 'off' : suite?.skipped;
    return {
      reward: resolved ? 1 : 0,
      resolved,
      reason: resolved ? 'resolved' : reason,
      tests,
      passed,
      failed: named.length - passed,
      canaries: guards,
      durationMs: Math.round(performance.now() - startedAt),
      ...(why && !resolved ? { detail: tail(why) } : {}),
      dropped,
      suiteTests: checked,
      suiteBroken: shown,
      ...(skipped !== undefined ? { suiteSkipped: skipped } : {}),
    };
  };

  // The screen reads what the reward would apply, so it runs before any sandbox exists.
  const taskScreen = task.reward.kind === 'tests' ? task.reward.screen : undefined;
  const flagged = screenDiff(agentPatch, activeRules(deps.screen, taskScreen));
  if (flagged.length > 0)
    return {
      ...finish(verdict('tampered', undefined, screenEvidence(flagged)), undefined),
      screen: flagged.slice(0, MAX_FINDINGS),
    };

  const spec = await rewardSandboxSpec(deps, input, { readOnlyMounts: rewardMounts(task) });
  const evaluation = withRewardSandbox(provider, spec, async (id): Promise<Verdict> => {
    if (agentPatch.trim() !== '') {
      const applied = await applyPatch(provider, id, agentPatch);
      if (applied.exitCode !== 0)
        return verdict('patch_failed', undefined, `agent diff does not apply: ${applied.stderr}`);
    }
    // Tests hidden in the image (environment.hidden_paths) come with no patch to apply.
    const testsApplied =
      task.test_patch === '' ? undefined : await applyPatch(provider, id, task.test_patch);
    if (testsApplied && testsApplied.exitCode !== 0) {
      return verdict(
        'patch_failed',
        undefined,
        `test patch does not apply over the agent diff: ${testsApplied.stderr}`,
      );
    }
    const canaries = await addCanaries(provider, id, task, rewardCanaryPlan(task), random);
    if (typeof canaries === 'string') return verdict('patch_failed', undefined, canaries);
    guards = canaries.reduce((n, c) => n + c.ids.length, 0);

    const run = await runTests(
      provider,
      id,
      task,
      canaries.map((c) => c.path),
    );
    if (run.kind === 'tampered') return verdict('tampered', run.reported, run.detail);
    if (run.kind !== 'reported') return verdict(run.kind, undefined, run.detail);
    const { reported } = run;
    // A canary that passed or was skipped was tampered with. A missing one may be an honest
    // import error in its file, which fails that file's tests too; only a report that would
    // otherwise resolve the task while missing a canary is forged.
    const canaryState = canaryStatuses(
      canaries.flatMap((c) => c.ids),
      reported,
    );
    const untouched = Object.keys(canaryState).filter((c) => canaryState[c] !== 'failed');
    const states = untouched.map((c) => `${c}: ${canaryState[c] ?? 'missing'}`).join(', ');
    if (
      untouched.some((c) => canaryState[c] !== undefined) ||
      (untouched.length > 0 && namedPass(reported))
    )
      return verdict('tampered', reported, `canary tests did not fail (${states})\n${run.detail}`);
    return untouched.length > 0
      ? verdict('unresolved', reported, `canary tests missing (${states})\n${run.detail}`)
      : verdict('unresolved', reported, run.detail);
  });
  // The baseline's runs go alongside the agent's (on a task's first evaluation on this host).
  const [found, suite] = await Promise.all([evaluation, suiteBaselineOf(deps, input, spec)]);
  return finish(found, suite);
}
