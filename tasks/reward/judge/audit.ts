/**
 * The audit beside a tests or script reward: a model judge reads the episode's transcript and
 * diff (AUDIT_RUBRIC unless the task gives a rubric) and flags cheating the tests cannot see,
 * such as reading hidden files or history. It runs whatever the reward, so flag rates can be
 * watched. With `action: 'zero'` a flag, or two unreadable answers (an agent must not dodge the
 * audit by confusing the judge), makes the reward 0; with `flag` the reward stands.
 */
import { randomBytes } from 'node:crypto';
import type { AuditSpec } from '../../schema.js';
import { judgeDepsOf } from '../judge-reward.js';
import type { RewardDeps, RewardInput, RewardResult } from '../result.js';
import { AUDIT_RUBRIC } from './prompt.js';
import { runJudge } from './run.js';

export async function auditReward(
  deps: RewardDeps,
  input: RewardInput,
  audit: AuditSpec,
  result: RewardResult,
): Promise<RewardResult> {
  const judge = await runJudge(
    judgeDepsOf(deps),
    {
      key: input.idempotencyKey,
      problem: input.task.problem_statement,
      diff: input.agentDiff,
      random: deps.random ?? randomBytes,
    },
    {
      role: 'audit',
      rubric: audit.rubric ?? AUDIT_RUBRIC,
      format: 'flag',
      include: audit.include,
      inputBytes: audit.input_bytes,
      model: audit.model,
      maxTokens: audit.max_tokens,
      temperature: audit.temperature,
    },
  );
  const audited = { ...result, durationMs: result.durationMs + judge.engineMs, judge };
  const verdict = judge.verdict;
  const flagged = verdict === null || ('flagged' in verdict && verdict.flagged);
  if (audit.action === 'flag' || !flagged) return audited;
  return {
    ...audited,
    reward: 0,
    resolved: false,
    reason: verdict === null ? 'judge_unparseable' : 'tampered',
    detail:
      verdict === null
        ? `the audit answered ${judge.calls} times with nothing readable; see ${judge.recordUri}`
        : `audit: ${verdict.reason}`,
  };
}
