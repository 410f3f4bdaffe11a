/**
 * Reading the judge's answer: external input, so parsed strictly. The answer must be one JSON
 * object (a ```json fence around it is tolerated), with exactly the keys the format names.
 */
import { z } from 'zod';
import type { AnswerFormat } from './prompt.js';
import type { JudgeVerdict } from './types.js';

/** The longest reason kept; the judge was asked for a sentence or two. */
export const MAX_REASON_CHARS = 1000;

const Reason = z.string().trim().min(1).max(MAX_REASON_CHARS);
const SCHEMAS: Record<AnswerFormat, z.ZodType<JudgeVerdict>> = {
  binary: z.strictObject({ score: z.union([z.literal(0), z.literal(1)]), reason: Reason }),
  scale: z.strictObject({ score: z.number().min(0).max(1), reason: Reason }),
  flag: z.strictObject({ flagged: z.boolean(), reason: Reason }),
};

const FENCE = /^```(?:json)?\s*\n([\s\S]*?)\n?```$/;

/** The verdict in `answer`, or why there is none (said to the judge in the reminder). */
export function parseVerdict(format: AnswerFormat, answer: string): JudgeVerdict | string {
  const trimmed = answer.trim();
  const body = FENCE.exec(trimmed)?.[1]?.trim() ?? trimmed;
  let data: unknown;
  try {
    data = JSON.parse(body);
  } catch {
    return 'it is not a JSON object';
  }
  const parsed = SCHEMAS[format].safeParse(data);
  return parsed.success ? parsed.data : z.prettifyError(parsed.error).replaceAll('\n', ' ');
}
