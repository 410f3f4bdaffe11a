/**
 * The judge reward: a model, through the configured engines, scores the episode by the task's
 * rubric from the problem, the agent's diff and the transcript (judge/run.ts). No sandbox: the
 * judge reads what the episode left, it runs nothing. A judge whose two answers cannot be read
 * scores 0 with reason `judge_unparseable`; an engine that cannot answer throws (retried).
 */
import { randomBytes } from 'node:crypto';
import type { RewardSpec } from '../schema.js';
import { runJudge } from './judge/run.js';
import { JudgeConfigError, type JudgeDeps } from './judge/types.js';
import type { RewardDeps, RewardInput, RewardResult } from './result.js';

export type JudgeRewardSpec = Extract<RewardSpec, { kind: 'judge' }>;

/** The worker's judge, or a configuration error: a judge task on a worker built without engines. */
export function judgeDepsOf(deps: RewardDeps): JudgeDeps {
  if (!deps.judge)
    throw new JudgeConfigError(
      'this task needs a model judge, and the reward was given no judge engine',
    );
  return deps.judge;
}

export async function evaluateJudgeReward(
  deps: RewardDeps,
  input: RewardInput,
  spec: JudgeRewardSpec,
): Promise<RewardResult> {
  const startedAt = performance.now();
  const judge = await runJudge(
    judgeDepsOf(deps),
    {
      key: input.idempotencyKey,
      problem: input.task.problem_statement,
      diff: input.agentDiff,
      random: deps.random ?? randomBytes,
    },
    {
      role: 'reward',
      rubric: spec.rubric,
      format: spec.score,
      include: spec.include,
      inputBytes: spec.input_bytes,
      model: spec.model,
      maxTokens: spec.max_tokens,
      temperature: spec.temperature,
    },
  );
  const verdict = judge.verdict;
  const reward = verdict && 'score' in verdict ? verdict.score : 0;
  return {
    reward,
    resolved: reward === 1,
    reason: verdict === null ? 'judge_unparseable' : reward === 1 ? 'resolved' : 'unresolved',
    tests: {},
    passed: 0,
    failed: 0,
    canaries: 0,
    durationMs: Math.round(performance.now() - startedAt),
    detail:
      verdict === null
        ? `the judge answered ${judge.calls} times with nothing readable; see ${judge.recordUri}`
        : verdict.reason,
    dropped: [],
    judge,
  };
}
