import { z } from 'zod';
import type { LogprobsMode, Sampling } from '../activities/types.js';

/** What log-probs the engine reports: before temperature and truncation, or of the distribution it sampled from. */
export const LOGPROBS_MODES = ['raw', 'processed'] as const satisfies readonly LogprobsMode[];

/**
 * Sampling parameters of a policy's model calls. Every one is sent to the engine on every request,
 * so a model folder's `generation_config.json` (vLLM and SGLang read it for defaults) cannot change
 * what is sampled; the defaults mean no truncation and no penalty.
 */
export const SamplingSchema = z.object({
  /** Default 1. */
  temperature: z.number().min(0).max(2).default(1),
  /** Default 1 (no nucleus truncation). */
  topP: z.number().gt(0).max(1).default(1),
  /** Keep only the k most likely tokens; -1 turns it off (vLLM's and SGLang's convention). Default -1. */
  topK: z.number().int().min(-1).default(-1),
  /** Drop tokens less likely than this fraction of the most likely one. Default 0 (off). */
  minP: z.number().min(0).max(1).default(0),
  /** OpenAI-style presence penalty. Default 0. */
  presencePenalty: z.number().min(-2).max(2).default(0),
  /** OpenAI-style frequency penalty. Default 0. */
  frequencyPenalty: z.number().min(-2).max(2).default(0),
  /** Multiplicative repetition penalty; 1 is none. Default 1. */
  repetitionPenalty: z.number().gt(0).max(2).default(1),
  /** Default output tokens of one model call when the agent does not say. Default 4096. */
  maxTokens: z.number().int().positive().default(4096),
  /**
   * What log-probs the engine was started to return, recorded with every turn: `raw` (vLLM's
   * default `raw_logprobs`: before temperature, top-k and top-p) or `processed` (after them; vLLM
   * `--logprobs-mode processed_logprobs`). Default `raw`.
   */
  logprobsMode: z.enum(LOGPROBS_MODES).default('raw'),
});

/** The schema and the payload type cannot drift apart. */
export type SamplingSchemaMatches = z.infer<typeof SamplingSchema> extends Sampling ? (Sampling extends z.infer<typeof SamplingSchema> ? true : never) : never;

/** Every default: no truncation, no penalty, raw log-probs. */
export const SAMPLING_DEFAULTS: Sampling = SamplingSchema.parse({});
