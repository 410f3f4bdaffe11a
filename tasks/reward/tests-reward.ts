/**
 * The test-based reward (../../../shared/specs/sandbox.md, "Rewards that resist hacking"): in a
 * fresh sandbox from the task's image and snapshot, apply the agent's diff minus tests and
 * test-runner configuration (the protected-path rule in diff.ts), then the hidden test patch,
 * then canary tests that must fail (canary-plan.ts), run the tests, and read the runner's own
 * report or the test command's console output (test-run.ts).
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
 */
import { randomBytes } from 'node:crypto';
import { hiddenPathsOf } from '../task-sandbox.js';
import { canaryPlanOf, canaryStatuses } from './canary-plan.js';
import { pathsOf, stripTestChanges } from './diff.js';
import type { ReportedStatus } from './report.js';
import {
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

  const finish = (
    reason: RewardReason,
    reported: Record<string, ReportedStatus>,
    detail?: string,
  ): RewardResult => {
    const tests: Record<string, TestOutcome> = {};
    for (const name of named) {
      const status = reported[name];
      tests[name] = status === undefined ? 'missing' : status === 'passed' ? 'passed' : 'failed';
    }
    const passed = named.filter((n) => tests[n] === 'passed').length;
    const resolved = reason === 'unresolved' && passed === named.length;
    return {
      reward: resolved ? 1 : 0,
      resolved,
      reason: resolved ? 'resolved' : reason,
      tests,
      passed,
      failed: named.length - passed,
      canaries: guards,
      durationMs: Math.round(performance.now() - startedAt),
      ...(detail && !resolved ? { detail: tail(detail) } : {}),
      dropped,
    };
  };

  const spec = await rewardSandboxSpec(deps, input, { readOnlyMounts: rewardMounts(task) });
  return withRewardSandbox(provider, spec, async (id) => {
    if (agentPatch.trim() !== '') {
      const applied = await applyPatch(provider, id, agentPatch);
      if (applied.exitCode !== 0)
        return finish('patch_failed', {}, `agent diff does not apply: ${applied.stderr}`);
    }
    // Tests hidden in the image (environment.hidden_paths) come with no patch to apply.
    const testsApplied =
      task.test_patch === '' ? undefined : await applyPatch(provider, id, task.test_patch);
    if (testsApplied && testsApplied.exitCode !== 0) {
      return finish(
        'patch_failed',
        {},
        `test patch does not apply over the agent diff: ${testsApplied.stderr}`,
      );
    }
    // Canaries go into test-patch files; tests hidden in the image have none to go into.
    const plan = task.test_patch === '' ? undefined : canaryPlanOf(task);
    const canaries = await addCanaries(provider, id, task, plan, random);
    if (typeof canaries === 'string') return finish('patch_failed', {}, canaries);
    guards = canaries.reduce((n, c) => n + c.ids.length, 0);

    const run = await runTests(
      provider,
      id,
      task,
      canaries.map((c) => c.path),
    );
    if (run.kind !== 'reported') return finish(run.kind, {}, run.detail);
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
    const result = finish('unresolved', reported, run.detail);
    if (
      untouched.some((c) => canaryState[c] !== undefined) ||
      (untouched.length > 0 && result.resolved)
    )
      return finish('tampered', reported, `canary tests did not fail (${states})\n${run.detail}`);
    return untouched.length > 0
      ? finish('unresolved', reported, `canary tests missing (${states})\n${run.detail}`)
      : result;
  });
}
