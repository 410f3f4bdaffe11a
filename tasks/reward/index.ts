/**
 * The test-based reward (../../../shared/specs/sandbox.md, "Rewards that resist hacking"): in a
 * fresh sandbox from the task's snapshot, apply the agent's diff minus tests and test-runner
 * configuration (the protected-path rule in diff.ts), then the hidden test patch, then canary
 * tests that must fail (canary.ts), run the tests, and read the runner's own report.
 *
 * What stays out of the agent's reach: the hidden tests, the gold patch and the expected results
 * never enter any sandbox but the reward's; the runner scripts are mounted read-only; the report
 * is read from the reward sandbox's own /tmp, which the agent's diff cannot touch. The tests do
 * run the agent's code, which can write anything that process can: the canaries are what catch it.
 */
import { randomBytes } from 'node:crypto';
import type { ExecResult, SandboxProvider } from '../../sandbox/provider.js';
import type { Task, TestFramework } from '../schema.js';
import { workspaceDirOf } from '../workspace.js';
import { workspaceKeyOf } from '../workspace-key.js';
import { canaryTargets, makeCanary, type Canary } from './canary.js';
import { pathsOf, stripTestChanges } from './diff.js';
import { parseReport, type ReportedStatus } from './report.js';
import { DEFAULT_TEST_COMMANDS, REPORT_PATHS, rewardMounts, TEST_FILES_ENV } from './runners.js';

export { canaryTargets, makeCanary, type Canary } from './canary.js';
export { isTestPath, pathsOf, splitDiff, stripTestChanges, type DiffSection } from './diff.js';
export { JUnitParseError, parseJUnit, parsePytestJUnit } from './junit.js';
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
  DEFAULT_TEST_COMMANDS,
  NODE_MODULES_MOUNT,
  REPORT_PATHS,
  RUNNER_MOUNT,
  JEST_CACHE_DIR,
  rewardMounts,
  runnerMounts,
  TEST_FILES_ENV,
} from './runners.js';
export { MAX_DIFF_BYTES, workspaceDiff, WorkspaceDiffError } from './workspace-diff.js';

export type RewardReason =
  | 'resolved'
  | 'unresolved'
  | 'patch_failed'
  | 'no_report'
  | 'timeout'
  | 'tampered';
export type TestOutcome = 'passed' | 'failed' | 'missing';

export interface RewardResult {
  /** 1 if resolved, else 0. */
  reward: number;
  resolved: boolean;
  reason: RewardReason;
  /** Every FAIL_TO_PASS and PASS_TO_PASS test; `missing` = absent from the report = not passed. */
  tests: Record<string, TestOutcome>;
  /** How many of `tests` passed. */
  passed: number;
  /** How many of `tests` did not pass (failed, skipped or missing). */
  failed: number;
  durationMs: number;
  /** Why it was not resolved, for people: `git apply` errors or the test output's tail (≤ 2 KB). */
  detail?: string;
  /** Paths of the agent's diff the reward dropped (tests, runner configuration). */
  dropped: string[];
}

export interface RewardDeps {
  provider: SandboxProvider;
  /** Where git-bundle and tarball workspaces are unpacked. Default `defaultWorkspaceCacheDir()`. */
  workspaceCacheDir?: string;
  /** Random bytes for the canaries' names and values. Default `crypto.randomBytes`. */
  random?: (bytes: number) => Buffer;
}

export interface RewardInput {
  task: Task;
  /** The agent's changes against the base snapshot, as `workspaceDiff` returns them. */
  agentDiff: string;
  /** Episode id + attempt; the reward sandbox uses `<key>:reward`. */
  idempotencyKey: string;
  /**
   * Extra labels of the reward sandbox; an `episode` label lets the janitor remove it as soon as
   * that episode's workflow closes instead of at its TTL. Default none.
   */
  labels?: Record<string, string>;
}

/** The reward sandbox is not in the state the reward needs (not a git repository, reused). */
export class RewardSandboxError extends Error {
  override name = 'RewardSandboxError';
}

const DETAIL_BYTES = 2000;
const MAX_REPORT_BYTES = 32 * 1024 * 1024;
const PATCH_TIMEOUT_MS = 60_000;
/** Reward sandbox TTL beyond the test time: copy, patches, teardown. */
const TTL_SLACK_MS = 10 * 60 * 1000;
/** Exit status of the claim script when this sandbox was already used by an earlier attempt. */
const ALREADY_USED = 99;

/**
 * Marks the sandbox as used. A retried reward (worker crash) gets the same sandbox back from the
 * idempotent create, possibly with patches already applied; the marker lets it start over.
 */
const CLAIM_SCRIPT = `[ -e .git/agent-rollout-reward-used ] && exit ${ALREADY_USED}; : > .git/agent-rollout-reward-used`;

/** Setup commands, then the tests; test output goes to a log, the report alone to stdout. */
function testScript(task: Task, framework: TestFramework): string {
  const steps = [...task.setup, task.test_command ?? DEFAULT_TEST_COMMANDS[framework]];
  const log = '/tmp/reward-tests.log';
  return [
    'rm -f -- "$REWARD_REPORT"',
    `(\n${steps.map((s) => `(\n${s}\n)`).join(' &&\n')}\n) >${log} 2>&1`,
    `echo "tests exited with status $?" >>${log}`,
    `tail -c ${DETAIL_BYTES} ${log} >&2`,
    'cat -- "$REWARD_REPORT" 2>/dev/null',
    'exit 0',
  ].join('\n');
}

function tail(text: string): string {
  return text.length > DETAIL_BYTES ? text.slice(-DETAIL_BYTES) : text;
}

/** False when an earlier attempt already used this sandbox. */
async function claim(provider: SandboxProvider, id: string): Promise<boolean> {
  const r = await provider.exec(id, ['/bin/sh', '-c', CLAIM_SCRIPT], {
    timeoutMs: PATCH_TIMEOUT_MS,
  });
  if (r.exitCode === ALREADY_USED) return false;
  if (r.exitCode !== 0)
    throw new RewardSandboxError(`cannot claim reward sandbox ${id}: ${r.stderr.trim()}`);
  return true;
}

async function applyPatch(
  provider: SandboxProvider,
  id: string,
  patch: string,
): Promise<ExecResult> {
  return provider.exec(id, ['git', 'apply', '--whitespace=nowarn', '-'], {
    stdin: patch,
    timeoutMs: PATCH_TIMEOUT_MS,
  });
}

/** Appends (or creates) a file under /workspace, refusing to follow a symlink out of it. */
const APPEND_SCRIPT = `p=$(realpath -m -- "$1") || exit 3
case "$p" in /workspace/*) ;; *) exit 4;; esac
mkdir -p -- "$(dirname -- "$p")" && cat >> "$p"`;

/** Adds the canaries to the hidden test files; returns them, or why they could not be added. */
async function addCanaries(
  provider: SandboxProvider,
  id: string,
  task: Task,
  framework: TestFramework,
  random: (bytes: number) => Buffer,
): Promise<Canary[] | string> {
  const canaries: Canary[] = [];
  for (const target of canaryTargets(framework, task.test_patch, random)) {
    const content = target.created
      ? ''
      : (await provider.readFile(id, target.path)).toString('utf8');
    const canary = makeCanary(framework, target.path, content, random);
    const r = await provider.exec(id, ['/bin/sh', '-c', APPEND_SCRIPT, 'append', canary.path], {
      stdin: canary.text,
      timeoutMs: PATCH_TIMEOUT_MS,
    });
    if (r.exitCode !== 0) return `cannot add canary to ${canary.path}: ${r.stderr.trim()}`;
    canaries.push(canary);
  }
  return canaries;
}

/** Canary ids that did not fail as they must: passed, skipped or missing from the report. */
function canariesNotFailed(canaries: Canary[], reported: Record<string, ReportedStatus>): string[] {
  return canaries.flatMap((c) => c.ids).filter((id) => reported[id] !== 'failed');
}

export async function evaluateReward(deps: RewardDeps, input: RewardInput): Promise<RewardResult> {
  const startedAt = performance.now();
  const { provider } = deps;
  const random = deps.random ?? randomBytes;
  const { task } = input;
  const framework = task.test_framework;
  if (task.reward.kind !== 'tests' || framework === undefined) {
    throw new RewardSandboxError(
      `task ${task.instance_id}: only report-based test rewards (test_framework) are scored so far`,
    );
  }
  const named = [...new Set([...task.FAIL_TO_PASS, ...task.PASS_TO_PASS])];
  const testMs = task.timeouts.test_s * 1000;
  const { diff: agentPatch, dropped } = stripTestChanges(input.agentDiff, pathsOf(task.test_patch));

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
      durationMs: Math.round(performance.now() - startedAt),
      ...(detail && !resolved ? { detail: tail(detail) } : {}),
      dropped,
    };
  };

  const workspaceDir = await workspaceDirOf(task, deps.workspaceCacheDir);
  const spec = {
    idempotencyKey: `${input.idempotencyKey}:reward`,
    workspaceDir,
    workspaceKey: await workspaceKeyOf(workspaceDir, deps.workspaceCacheDir),
    readOnlyMounts: rewardMounts(framework),
    labels: { ...input.labels, role: 'reward', task: task.instance_id },
    ttlMs: testMs + TTL_SLACK_MS,
  };
  let sandbox = await provider.create(spec);
  try {
    if (!(await claim(provider, sandbox.id))) {
      await provider.destroy(sandbox.id);
      sandbox = await provider.create(spec);
      if (!(await claim(provider, sandbox.id)))
        throw new RewardSandboxError(`${sandbox.id} was reused after destroy`);
    }
    const id = sandbox.id;

    if (agentPatch.trim() !== '') {
      const applied = await applyPatch(provider, id, agentPatch);
      if (applied.exitCode !== 0)
        return finish('patch_failed', {}, `agent diff does not apply: ${applied.stderr}`);
    }
    const testsApplied = await applyPatch(provider, id, task.test_patch);
    if (testsApplied.exitCode !== 0) {
      return finish(
        'patch_failed',
        {},
        `test patch does not apply over the agent diff: ${testsApplied.stderr}`,
      );
    }
    const canaries = await addCanaries(provider, id, task, framework, random);
    if (typeof canaries === 'string') return finish('patch_failed', {}, canaries);

    const run = await provider.exec(
      id,
      { shell: testScript(task, framework) },
      {
        env: {
          REWARD_REPORT: REPORT_PATHS[framework],
          [TEST_FILES_ENV]: canaries.map((c) => c.path).join('\n'),
        },
        timeoutMs: testMs,
        maxOutputBytes: MAX_REPORT_BYTES,
      },
    );
    if (run.timedOut)
      return finish('timeout', {}, `tests did not finish in ${task.timeouts.test_s} s`);
    if (run.stdout === '' || run.truncated) return finish('no_report', {}, run.stderr);
    let reported: Record<string, ReportedStatus>;
    try {
      reported = parseReport(framework, run.stdout);
    } catch (err) {
      return finish('no_report', {}, `${(err as Error).message}\n${run.stderr}`);
    }
    // A canary that passed or was skipped was tampered with. A missing one may be an honest
    // import error in its file, which fails that file's tests too; only a report that would
    // otherwise resolve the task while missing a canary is forged.
    const untouched = canariesNotFailed(canaries, reported);
    const states = untouched.map((c) => `${c}: ${reported[c] ?? 'missing'}`).join(', ');
    const result = finish('unresolved', reported, run.stderr);
    if (
      untouched.some((c) => reported[c] !== undefined) ||
      (untouched.length > 0 && result.resolved)
    )
      return finish('tampered', reported, `canary tests did not fail (${states})\n${run.stderr}`);
    return untouched.length > 0
      ? finish('unresolved', reported, `canary tests missing (${states})\n${run.stderr}`)
      : result;
  } finally {
    await provider.destroy(sandbox.id);
  }
}
