/**
 * One judgement: prompt the configured engines, parse the verdict, once more with a reminder if
 * the first answer cannot be read, and store the full record (prompts, raw answers, token ids) in
 * the artifact store; the reward keeps a summary with the record's URI.
 *
 * An engine that cannot answer is machinery failure (JudgeUnavailableError, the activity is
 * retried); a judge that answers twice with nothing readable is a verdict of its own (null), which
 * the caller scores.
 */
import type { JudgeInclude } from '../../schema.js';
import { judgePrompt, reminder, type AnswerFormat, type JudgeMaterial } from './prompt.js';
import { parseVerdict } from './verdict.js';
import type { JudgeCallResult, JudgeDeps, JudgeSummary, JudgeVerdict } from './types.js';

export interface JudgeRun {
  role: JudgeSummary['role'];
  rubric: string;
  format: AnswerFormat;
  include: readonly JudgeInclude[];
  inputBytes: number;
  model?: string;
  maxTokens: number;
  temperature: number;
}

export interface JudgeInput {
  /** Names the record: the reward's idempotency key (episode id + attempt). */
  key: string;
  problem: string;
  diff: string;
  random: (bytes: number) => Buffer;
}

/** The artifact key of a judgement's record. */
export function judgeRecordKey(key: string, role: JudgeSummary['role']): string {
  return `judges/${key.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\./, '_')}/${role}.json`;
}

export async function runJudge(
  deps: JudgeDeps,
  input: JudgeInput,
  run: JudgeRun,
): Promise<JudgeSummary> {
  const material: JudgeMaterial = {
    problem: input.problem,
    diff: input.diff,
    transcript: run.include.includes('transcript') ? await deps.transcript() : [],
  };
  let messages = judgePrompt(
    {
      rubric: run.rubric,
      format: run.format,
      include: run.include,
      inputBytes: run.inputBytes,
      tag: input.random(8).toString('hex'),
    },
    material,
  );
  const calls: { messages: typeof messages; result: JudgeCallResult; problem: string | null }[] =
    [];
  let verdict: JudgeVerdict | null = null;
  for (let attempt = 0; attempt < 2 && verdict === null; attempt++) {
    const result = await deps.engine.complete({
      messages,
      model: run.model,
      maxTokens: run.maxTokens,
      temperature: run.temperature,
    });
    const parsed = parseVerdict(run.format, result.text);
    calls.push({ messages, result, problem: typeof parsed === 'string' ? parsed : null });
    if (typeof parsed === 'string')
      messages = [...messages, ...reminder(run.format, result.text, parsed)];
    else verdict = parsed;
  }
  const sum = (pick: (r: JudgeCallResult) => number) =>
    calls.reduce((n, c) => n + pick(c.result), 0);
  const last = calls[calls.length - 1]!.result;
  const promptTokens = sum((r) => r.promptTokens);
  const completionTokens = sum((r) => r.completionTokens);
  const record = { role: run.role, rubric: run.rubric, format: run.format, verdict, calls };
  const stored = await deps.records.put(
    judgeRecordKey(input.key, run.role),
    Buffer.from(JSON.stringify(record)),
  );
  return {
    role: run.role,
    model: last.model,
    instance: last.instance,
    calls: calls.length,
    promptTokens,
    completionTokens,
    cachedTokens: sum((r) => r.cachedTokens),
    engineMs: sum((r) => r.engineMs),
    cost: promptTokens * deps.prices.promptToken + completionTokens * deps.prices.completionToken,
    verdict,
    recordUri: stored.uri,
  };
}
