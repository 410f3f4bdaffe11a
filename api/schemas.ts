import { z } from 'zod';
import { MAX_POLICY_VERSION } from '../gateway/policy/policy-control.js';
import { LOGPROBS_MODES, SamplingSchema } from '../gateway/sampling-schema.js';

/** The sampling bounds the gateway holds sessions to: a batch's overrides take the same ones. */
const SAMPLING_BOUNDS = SamplingSchema.shape;
import { ID_PATTERN, ID_RULE } from '../workflows/ids.js';

/**
 * Every shape the HTTP API takes or gives, as zod schemas: routes validate with them and the
 * OpenAPI document is generated from them. Keys are snake_case, like the manifest.
 */

/** Batch ids become workflow ids, directory names and (with `_` replaced) group id prefixes. */
export const BatchIdSchema = z
  .string()
  .regex(ID_PATTERN, ID_RULE)
  .refine((id) => !id.includes('..'), ID_RULE);
/** Group ids are `<batch id>.g<task index>`: the same charset. */
export const GroupIdSchema = BatchIdSchema;

export const BatchParams = z.object({ id: BatchIdSchema });
export const ReportParams = z.object({ id: BatchIdSchema, report_id: z.uuid() });

export const CreateBatchBody = z
  .object({
    batch_id: BatchIdSchema.optional().describe('Default: batch-<timestamp>. Starting an existing id again answers that batch.'),
    tasks: z.string().min(1).optional().describe('`builtin`, a task pack directory or a JSON/JSONL task file. Default: config `batch.tasks`.'),
    task_ids: z.array(z.string().min(1)).min(1).optional().describe('Default: every task of the source.'),
    n: z.number().int().positive().optional().describe('Samples per task (GRPO group size). Default: config `batch.n`.'),
    agent: z.string().min(1).optional().describe('`builtin` or a black-box agent preset. Default: config `agent.name`.'),
    concurrency: z.number().int().positive().optional().describe('Episodes running at once. Default: config `batch.concurrency`.'),
    filter_uniform_groups: z.boolean().optional().describe('Mark groups whose rewards are all equal as `filtered`. Default: config `batch.filterUniformGroups`.'),
    max_staleness: z.number().int().nonnegative().nullable().optional().describe('Policy versions an episode may lag. Default: no bound.'),
    stale_action: z.enum(['drop', 'rerun']).optional().describe('Default `drop`.'),
    limits: z
      .object({
        max_turns: z.number().int().positive(),
        max_context_tokens: z.number().int().positive(),
        max_wall_time_ms: z.number().int().positive(),
        max_infra_attempts: z.number().int().positive(),
        command_timeout_ms: z.number().int().positive(),
      })
      .partial()
      .strict()
      .optional()
      .describe('Each key given replaces the configured one.'),
    sampling: z
      .object({
        temperature: SAMPLING_BOUNDS.temperature.unwrap(),
        top_p: SAMPLING_BOUNDS.topP.unwrap(),
        top_k: SAMPLING_BOUNDS.topK.unwrap().describe('-1: off.'),
        min_p: SAMPLING_BOUNDS.minP.unwrap(),
        presence_penalty: SAMPLING_BOUNDS.presencePenalty.unwrap(),
        frequency_penalty: SAMPLING_BOUNDS.frequencyPenalty.unwrap(),
        repetition_penalty: SAMPLING_BOUNDS.repetitionPenalty.unwrap(),
        max_tokens: SAMPLING_BOUNDS.maxTokens.unwrap(),
        logprobs_mode: SAMPLING_BOUNDS.logprobsMode.unwrap().describe('What log-probs the engines return: `raw` (vLLM default) or `processed` (`--logprobs-mode processed_logprobs`).'),
      })
      .partial()
      .strict()
      .optional()
      .describe('Each key given replaces the configured one.'),
  })
  .strict();
export type CreateBatchBody = z.infer<typeof CreateBatchBody>;

export const CreateBatchAnswer = z.object({ batch_id: z.string() });

export const Progress = z.object({
  batch_id: z.string(),
  total: z.number().int(),
  started: z.number().int(),
  running: z.number().int(),
  done: z.number().int(),
  ok: z.number().int(),
  infra_errors: z.number().int(),
  queued: z.number().int().describe('Episodes not started yet: total = done + running + queued.'),
  mean_reward: z.number().nullable(),
  groups_finished: z.number().int(),
  stale: z.number().int(),
  export_failed: z.number().int().describe('Groups whose file could not be written whole.'),
});

export const ManifestFile = z.object({ uri: z.string(), format: z.literal('arrow-stream'), rows: z.number().int(), sha256: z.string() });

export const FinishedGroup = z.object({
  group_id: z.string(),
  task_id: z.string(),
  n_requested: z.number().int(),
  n_ok: z.number().int(),
  status: z.enum(['finished', 'failure', 'filtered', 'export_failed']),
  rewards: z.array(z.number().nullable()),
  failures: z.array(z.object({ episode_index: z.number().int(), reason: z.string() })),
  missing_episode_ids: z.array(z.string()).optional().describe('Only for `export_failed`: the ok episodes whose rows could not be exported.'),
  file: ManifestFile.nullable(),
});

export const Manifest = z.object({
  schema: z.literal('agent-rollout/v1'),
  batch_id: z.string(),
  status: z.enum(['complete', 'partial', 'cancelled']),
  groups: z.array(FinishedGroup),
  files: z.array(ManifestFile),
  stats: z.object({
    episodes: z.number().int(),
    chains: z.number().int(),
    tokens: z.number().int(),
    wall_s: z.number(),
    stale: z.number().int(),
    // Manifests of batches that ended before export checks have none.
    export_failed: z.number().int().optional(),
  }),
});

export const BatchStatusAnswer = z.object({
  batch_id: z.string(),
  status: z.enum(['running', 'completed', 'failed', 'cancelled', 'terminated', 'timed_out', 'unknown']).describe('The batch workflow status.'),
  progress: Progress.nullable(),
  manifest: Manifest.nullable().describe('The manifest, once the batch has ended (completed, or cancelled).'),
  acked_group_ids: z.array(z.string()),
  logprob_reports: z.array(z.string()).describe('Paths (`/v1/batches/{id}/logprobs/{report_id}`) of the stored log-prob consistency reports, oldest first.'),
});

export const GroupsQuery = z.object({
  after: z.coerce.number().int().nonnegative().default(0).describe('Finished groups already seen (the cursor).'),
  timeout_s: z.coerce.number().min(0).max(300).default(30).describe('Longest wait for a group past the cursor, seconds.'),
});

export const GroupsAnswer = z.object({
  groups: z.array(FinishedGroup),
  next: z.number().int().describe('The cursor to send next.'),
  done: z.boolean().describe('The batch has ended and every finished group was handed over.'),
});

export const DataQuery = z.object({
  group_id: z.union([GroupIdSchema, z.array(GroupIdSchema)]).optional().describe('Only these groups (repeat the parameter for several).'),
  unacked: z.enum(['true', 'false']).default('false').describe('Only groups not acknowledged yet.'),
});

export const AckBody = z.object({ group_ids: z.array(GroupIdSchema).min(1) }).strict();
export const AckAnswer = z.object({ batch_id: z.string(), acked_group_ids: z.array(z.string()) });

export const CancelAnswer = z.object({ batch_id: z.string(), status: z.literal('cancel_requested') });

export const LogprobsBody = z
  .object({
    trajectories: z
      .array(
        z
          .object({
            trajectory_id: z.string().min(1),
            logprobs: z.array(z.number()).describe('The trainer log-prob of each token, over the layout.'),
            layout: z
              .enum(['response', 'sequence'])
              .default('response')
              .describe('`response`: one value per token of input_ids[prompt_length:] (verl `responses`); `sequence`: one per token of input_ids. Only sampled tokens are compared.'),
          })
          .strict(),
      )
      .min(1),
    top_k: z.number().int().min(1).max(1000).default(5).describe('Worst trajectories to list.'),
    temperature: z
      .number()
      .min(0)
      .max(2)
      .optional()
      .describe('Sampling temperature of the tokens to compare, the one the trainer recomputed at (raw log-probs are before temperature: compare those with unscaled trainer log-probs). Default: the one temperature the given tokens were sampled at (a 400 when they hold several).'),
    logprobs_mode: z
      .enum(LOGPROBS_MODES)
      .optional()
      .describe('Whether the trainer recomputed raw log-probs (before temperature and truncation) or processed ones; only tokens recorded in that mode are compared. Default: the one mode recorded.'),
  })
  .strict();
export type LogprobsBody = z.infer<typeof LogprobsBody>;

export const TrajectoryDiff = z.object({
  trajectory_id: z.string(),
  tokens: z.number().int(),
  mean_abs_prob_diff: z.number(),
  max_abs_prob_diff: z.number(),
});

const SamplingKey = {
  temperature: z.number().nullable().describe('Sampling temperature of the tokens (null: recorded before turns kept it).'),
  logprobs_mode: z.string().nullable().describe('`raw` or `processed` log-probs (null: recorded before turns kept it).'),
};

const GroupFigures = z.object({
  ...SamplingKey,
  compared: z.boolean().describe('Whether these are the tokens of the headline figures.'),
  trajectories: z.number().int(),
  tokens: z.number().int(),
  pearson: z.number().nullable(),
  mean_abs_prob_diff: z.number(),
  max_abs_prob_diff: z.number(),
  std_abs_prob_diff: z.number(),
});

export const LogprobReport = z.object({
  batch_id: z.string(),
  report_uri: z.string(),
  created_at: z.string(),
  compared: z.object(SamplingKey).describe('The temperature and log-prob mode compared: the headline figures cover only tokens recorded at them.'),
  trajectories: z.number().int().describe('Trajectories holding compared tokens.'),
  tokens: z.number().int().describe('Sampled tokens compared.'),
  pearson: z.number().nullable().describe('Pearson correlation of rollout and trainer token probabilities (null under 2 tokens or no variance).'),
  mean_abs_prob_diff: z.number(),
  max_abs_prob_diff: z.number(),
  std_abs_prob_diff: z.number(),
  worst: z.array(TrajectoryDiff).describe('Trajectories with the largest mean absolute probability difference.'),
  groups: z.array(GroupFigures).describe('Every (temperature, log-prob mode) of the given sampled tokens, each with its own figures, never mixed into the headline ones.'),
});
export type LogprobReport = z.infer<typeof LogprobReport>;

export const PolicyState = z.object({ version: z.number().int(), paused: z.boolean() });
export const PauseBody = z.object({ mode: z.enum(['finish', 'abort']) }).strict();
export const PauseAnswer = PolicyState.extend({ paused: z.literal(true), finished: z.number().int(), aborted: z.number().int() });
export const ResumeBody = z.object({ version: z.number().int().nonnegative().max(MAX_POLICY_VERSION) }).strict();

export const ErrorAnswer = z.object({ error: z.object({ type: z.string(), message: z.string() }) });
