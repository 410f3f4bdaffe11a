/**
 * The suite baseline of a task: the tests that pass both at the base (test patch applied, no fix)
 * and with the gold patch when the task's whole configured test run goes (test-run.ts, no
 * canaries). The agent's run must pass them too, besides FAIL_TO_PASS and PASS_TO_PASS, as
 * SWE-bench checks PASS_TO_PASS across the repository's suite: datasets list only tests of the
 * hidden files, so without it a fix that breaks the rest of the package would score 1.
 *
 * A test that fails in either run (flaky, or changed by the fix itself) is left out. With no gold
 * patch the base run alone counts, FAIL_TO_PASS left out when checking. A run that times out,
 * writes no report or whose patch does not apply leaves the baseline empty, with the reason,
 * cached like any other (a rerun would cost as much; removing the file retries).
 *
 * Made lazily on a task's first evaluation on a host and cached on disk (suite-baseline-cache.ts);
 * concurrent evaluations of a task in one process share one computation.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { SandboxSpec } from '../../sandbox/provider.js';
import { BASE_IMAGE } from '../../sandbox/images/types.js';
import type { Task } from '../schema.js';
import { defaultWorkspaceCacheDir } from '../workspace.js';
import { rewardCanaryPlan } from './canary-plan.js';
import type { ReportedStatus } from './report.js';
import type { RewardDeps, RewardInput } from './result.js';
import { applyPatch, withRewardSandbox } from './sandbox-steps.js';
import {
  baselineFile,
  baselineKey,
  readBaseline,
  writeBaseline,
  type SuiteBaseline,
} from './suite-baseline-cache.js';
import { runTests } from './test-run.js';

export type { SuiteBaseline } from './suite-baseline-cache.js';

/** Computations under way, by cache file; each is dropped once settled (the file holds it then). */
const pending = new Map<string, Promise<SuiteBaseline>>();

/**
 * The task's suite baseline, from the cache or made now in sandboxes of `spec` (the reward
 * sandbox's spec); undefined when `deps.suiteBaseline` is false. Throws only what the sandbox
 * provider or the cache directory throws.
 */
export async function suiteBaselineOf(
  deps: RewardDeps,
  input: RewardInput,
  spec: SandboxSpec,
): Promise<SuiteBaseline | undefined> {
  if (deps.suiteBaseline === false) return undefined;
  const { task } = input;
  const key = baselineKey(task, await imageIdOf(deps, task), spec);
  const dir =
    deps.suiteBaselineDir ??
    join(deps.workspaceCacheDir ?? defaultWorkspaceCacheDir(), 'suite-baselines');
  const file = baselineFile(dir, task.instance_id, key);
  let made = pending.get(file);
  if (!made) {
    made = cachedOrMade(deps, input, spec, file, key).finally(() => pending.delete(file));
    pending.set(file, made);
  }
  return made;
}

/** The image's digest where an image store resolves it (a tag can move), else its reference. */
async function imageIdOf(deps: RewardDeps, task: Task): Promise<string> {
  const reference = task.environment.image ?? BASE_IMAGE;
  return deps.images ? (await deps.images.resolve(reference)).digest : reference;
}

async function cachedOrMade(
  deps: RewardDeps,
  input: RewardInput,
  spec: SandboxSpec,
  file: string,
  key: string,
): Promise<SuiteBaseline> {
  const cached = await readBaseline(file, key);
  if (cached) return cached;
  const { task } = input;
  const runs = await Promise.all([
    baselineRun(deps, input, spec, 'base'),
    ...(task.patch === '' ? [] : [baselineRun(deps, input, spec, 'gold')]),
  ]);
  const baseline = intersect(runs);
  await writeBaseline(file, key, task.instance_id, baseline);
  return baseline;
}

type RunPassed = { passed: string[] } | { skipped: string };

function intersect(runs: RunPassed[]): SuiteBaseline {
  const sets: Set<string>[] = [];
  for (const run of runs) {
    if ('skipped' in run) return { tests: [], skipped: run.skipped };
    sets.push(new Set(run.passed));
  }
  const [first, ...rest] = sets;
  return { tests: [...(first ?? [])].filter((t) => rest.every((s) => s.has(t))).sort() };
}

/** One baseline run: the gold patch (for `gold`), the test patch, the tests; what passed. */
async function baselineRun(
  deps: RewardDeps,
  input: RewardInput,
  spec: SandboxSpec,
  run: 'base' | 'gold',
): Promise<RunPassed> {
  const { provider } = deps;
  const { task } = input;
  const runSpec: SandboxSpec = {
    ...spec,
    idempotencyKey: `${input.idempotencyKey}:baseline-${run}`,
    labels: { ...spec.labels, baseline: run },
  };
  return withRewardSandbox(provider, runSpec, async (id) => {
    const patches = [...(run === 'gold' ? [task.patch] : []), task.test_patch];
    for (const patch of patches.filter((p) => p !== '')) {
      if ((await applyPatch(provider, id, patch)).exitCode !== 0)
        return { skipped: `${run} run: patch_failed` };
    }
    const tests = await runTests(provider, id, task, hiddenTestFiles(task));
    if (tests.kind !== 'reported') return { skipped: `${run} run: ${tests.kind}` };
    const { reported } = tests;
    return { passed: Object.keys(reported).filter((t) => reported[t] === 'passed') };
  });
}

/**
 * The hidden test files the reward's run names (the files canaries go into), without the canary
 * files it would create, so both runs run the same files.
 */
function hiddenTestFiles(task: Task): string[] {
  // The random name of a file the reward would create is dropped, so the task's own random is not drawn.
  return (rewardCanaryPlan(task)?.targets(task.test_patch, randomBytes) ?? [])
    .filter((t) => !t.created)
    .map((t) => t.path);
}

/** The baseline tests besides `named` that the agent's run did not pass (failed, skipped, missing). */
export function brokenSuiteTests(
  baseline: SuiteBaseline,
  named: ReadonlySet<string>,
  reported: Record<string, ReportedStatus>,
): { checked: number; broken: string[] } {
  const checked = baseline.tests.filter((t) => !named.has(t));
  return { checked: checked.length, broken: checked.filter((t) => reported[t] !== 'passed') };
}
