/**
 * The steps every reward sandbox goes through: made from the task's image and snapshot, claimed
 * (so that a retried reward starts over), patched, and always destroyed.
 */
import type { ExecResult, SandboxProvider, SandboxSpec } from '../../sandbox/provider.js';
import type { Task } from '../schema.js';
import { taskSandboxSpec } from '../task-sandbox.js';
import type { Canary, Random } from './canary.js';
import type { CanaryPlan } from './canary-plan.js';
import { RewardSandboxError, type RewardDeps, type RewardInput } from './result.js';

export const PATCH_TIMEOUT_MS = 60_000;
/** Reward sandbox TTL beyond the test time: copy, patches, teardown. */
const TTL_SLACK_MS = 10 * 60 * 1000;
/** Exit status of the claim script when this sandbox was already used by an earlier attempt. */
const ALREADY_USED = 99;

/**
 * Marks the sandbox as used. A retried reward (worker crash) gets the same sandbox back from the
 * idempotent create, possibly with patches already applied; the marker lets it start over.
 */
const CLAIM_SCRIPT = `[ -e .git/agent-rollout-reward-used ] && exit ${ALREADY_USED}; : > .git/agent-rollout-reward-used`;

/** The reward sandbox's spec: the task's image and snapshot, as the agent's sandbox had them. */
export async function rewardSandboxSpec(
  deps: RewardDeps,
  input: RewardInput,
  mounts: Pick<SandboxSpec, 'readOnlyMounts' | 'writableDirs'>,
): Promise<SandboxSpec> {
  const { task } = input;
  return {
    idempotencyKey: `${input.idempotencyKey}:reward`,
    ...(await taskSandboxSpec(task, 'reward', deps)),
    ...mounts,
    labels: { ...input.labels, role: 'reward', task: task.instance_id },
    ttlMs: task.timeouts.test_s * 1000 + TTL_SLACK_MS,
  };
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

/** Runs `use` in a fresh, claimed sandbox of `spec`, destroyed afterwards whatever happens. */
export async function withRewardSandbox<T>(
  provider: SandboxProvider,
  spec: SandboxSpec,
  use: (id: string) => Promise<T>,
): Promise<T> {
  let sandbox = await provider.create(spec);
  try {
    if (!(await claim(provider, sandbox.id))) {
      await provider.destroy(sandbox.id);
      sandbox = await provider.create(spec);
      if (!(await claim(provider, sandbox.id)))
        throw new RewardSandboxError(`${sandbox.id} was reused after destroy`);
    }
    return await use(sandbox.id);
  } finally {
    await provider.destroy(sandbox.id);
  }
}

export async function applyPatch(
  provider: SandboxProvider,
  id: string,
  patch: string,
): Promise<ExecResult> {
  return provider.exec(id, ['git', 'apply', '--whitespace=nowarn', '-'], {
    stdin: patch,
    timeoutMs: PATCH_TIMEOUT_MS,
  });
}

/** Writes (or creates) a file under /workspace, refusing to follow a symlink out of it. */
const WRITE_SCRIPT = `p=$(realpath -m -- "$1") || exit 3
case "$p" in /workspace/*) ;; *) exit 4;; esac
mkdir -p -- "$(dirname -- "$p")" && cat > "$p"`;

/** Adds the canaries to the hidden test files; returns them, or why they could not be added. */
export async function addCanaries(
  provider: SandboxProvider,
  id: string,
  task: Task,
  plan: CanaryPlan | undefined,
  random: Random,
): Promise<Canary[] | string> {
  const canaries: Canary[] = [];
  for (const target of plan?.targets(task.test_patch, random) ?? []) {
    const content = target.created
      ? ''
      : (await provider.readFile(id, target.path)).toString('utf8');
    const canary = plan?.make(target.path, content, task.FAIL_TO_PASS, random);
    if (!canary) continue;
    const r = await provider.exec(id, ['/bin/sh', '-c', WRITE_SCRIPT, 'write', canary.path], {
      stdin: canary.text,
      timeoutMs: PATCH_TIMEOUT_MS,
    });
    if (r.exitCode !== 0) return `cannot add canary to ${canary.path}: ${r.stderr.trim()}`;
    canaries.push(canary);
  }
  return canaries;
}
