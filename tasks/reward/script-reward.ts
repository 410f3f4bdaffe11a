/**
 * The script reward (Harbor's verifier): in a fresh sandbox from the task's image and snapshot,
 * apply the agent's whole diff, mount the verifier folder read-only at `/tests`, run the setup
 * commands and `reward.command` in /workspace, and read the number it left in `reward.file`
 * (`reward.txt`: a number in [0, 1]), or in a `reward.json` beside it (`{ "reward": 0.5, … }`).
 *
 * The reward file's folder is made writable in the sandbox (`SandboxSpec.writableDirs`) unless
 * it is under /workspace or /tmp, which are writable already; it starts empty in every sandbox.
 *
 * This is weaker than a tests reward: no canaries, no hidden-test patch, and the verifier runs
 * the agent's code in the same sandbox, so that code can write the reward file itself. Tests
 * rewards (tests-reward.ts) are the hardened path; use a script reward for tasks only a script
 * can judge.
 */
import { posix, resolve } from 'node:path';
import { z } from 'zod';
import type { RewardSpec } from '../schema.js';
import { applyPatch, rewardSandboxSpec, withRewardSandbox } from './sandbox-steps.js';
import {
  diffRejected,
  tail,
  type RewardDeps,
  type RewardInput,
  type RewardReason,
  type RewardResult,
} from './result.js';

export type ScriptRewardSpec = Extract<RewardSpec, { kind: 'script' }>;

/** Where the verifier folder is mounted, read-only. */
export const VERIFIER_MOUNT = '/tests';
/** The largest reward file read. */
const MAX_REWARD_FILE_BYTES = 64 * 1024;
const OUTPUT_BYTES = 1024 * 1024;

const RewardJsonSchema = z.looseObject({ reward: z.number().min(0).max(1) });
const NUMBER = /^[+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/** The reward in a file's text, or why there is none. */
export function parseRewardFile(path: string, text: string): number | string {
  const trimmed = text.trim();
  if (path.endsWith('.json')) {
    let data: unknown;
    try {
      data = JSON.parse(trimmed);
    } catch (err) {
      return `${path} is not JSON: ${(err as Error).message}`;
    }
    const parsed = RewardJsonSchema.safeParse(data);
    return parsed.success ? parsed.data.reward : `${path}: ${z.prettifyError(parsed.error)}`;
  }
  const value = Number(trimmed);
  if (!NUMBER.test(trimmed) || !(value >= 0 && value <= 1))
    return `${path} holds ${JSON.stringify(trimmed.slice(0, 80))}, not a number in [0, 1]`;
  return value;
}

/** Paths the command may leave the reward in: the file, then a `reward.json` beside it. */
function rewardPaths(file: string): string[] {
  const json = posix.join(posix.dirname(file), 'reward.json');
  return file === json ? [file] : [file, json];
}

function isUnder(path: string, dir: string): boolean {
  return path.startsWith(`${dir}/`);
}

export async function evaluateScriptReward(
  deps: RewardDeps,
  input: RewardInput,
  verifier: ScriptRewardSpec,
): Promise<RewardResult> {
  if (input.agentDiffRejected) return diffRejected([], input.agentDiffRejected);
  const startedAt = performance.now();
  const { provider } = deps;
  const { task } = input;
  const { dir, command, reward_file: file } = verifier;
  const finish = (reason: RewardReason, reward: number, detail?: string): RewardResult => ({
    reward,
    resolved: reward === 1,
    reason: reward === 1 ? 'resolved' : reason,
    tests: {},
    passed: 0,
    failed: 0,
    canaries: 0,
    durationMs: Math.round(performance.now() - startedAt),
    ...(detail && reward !== 1 ? { detail: tail(detail) } : {}),
    dropped: [],
  });
  const fileDir = posix.dirname(file);
  const writable = isUnder(file, '/workspace') || isUnder(file, '/tmp') ? [] : [fileDir];
  const spec = await rewardSandboxSpec(deps, input, {
    readOnlyMounts: [{ hostPath: resolve(dir), sandboxPath: VERIFIER_MOUNT }],
    writableDirs: writable,
  });
  return withRewardSandbox(provider, spec, async (id) => {
    if (input.agentDiff.trim() !== '') {
      const applied = await applyPatch(provider, id, input.agentDiff);
      if (applied.exitCode !== 0)
        return finish('patch_failed', 0, `agent diff does not apply: ${applied.stderr}`);
    }
    const script = [...task.setup, command].map((s) => `(\n${s}\n)`).join(' &&\n');
    const run = await provider.exec(
      id,
      { shell: `(\n${script}\n) 2>&1\necho "verifier exited with status $?"` },
      { timeoutMs: task.timeouts.test_s * 1000, maxOutputBytes: OUTPUT_BYTES },
    );
    if (run.timedOut)
      return finish(
        'timeout',
        0,
        `verifier did not finish in ${task.timeouts.test_s} s\n${run.stdout}`,
      );
    const problems: string[] = [];
    for (const path of rewardPaths(file)) {
      const read = await provider.exec(
        id,
        [
          '/bin/sh',
          '-c',
          'test -f "$1" && head -c "$2" -- "$1"',
          'read-reward',
          path,
          String(MAX_REWARD_FILE_BYTES),
        ],
        { timeoutMs: 10_000 },
      );
      if (read.exitCode !== 0) continue;
      const reward = parseRewardFile(path, read.stdout);
      if (typeof reward === 'number') return finish('unresolved', reward, run.stdout);
      problems.push(reward);
    }
    const why = problems.length > 0 ? problems.join('\n') : `the verifier wrote no ${file}`;
    return finish('no_report', 0, `${why}\n${run.stdout}`);
  });
}
