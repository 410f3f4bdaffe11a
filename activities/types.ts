import type { JudgeSummary } from '../tasks/reward/judge/types.js';

/**
 * Payload types shared by workflows and activities. Everything here travels through Temporal, so
 * it stays small: ids, counts and short reasons, never tokens, transcripts or logs.
 */

export interface EpisodeLimits {
  /** Model turns per episode. */
  maxTurns: number;
  /** Context window of a chain, prompt plus output, in tokens. */
  maxContextTokens: number;
  /** Wall time of the agent phase of one attempt. */
  maxWallTimeMs: number;
  /** Attempts after infrastructure failures before the episode ends as infra_error. */
  maxInfraAttempts: number;
  /** Wall time of one agent shell command. */
  commandTimeoutMs: number;
}

/** What log-probs the engine reports (gateway/sampling-schema.ts). */
export type LogprobsMode = 'raw' | 'processed';

/** Sampling parameters, every one sent to the engine explicitly (see gateway/sampling-schema.ts). */
export interface Sampling {
  temperature: number;
  topP: number;
  /** -1: off. */
  topK: number;
  minP: number;
  presencePenalty: number;
  frequencyPenalty: number;
  repetitionPenalty: number;
  /** Default output tokens of one model call when the agent does not say. */
  maxTokens: number;
  /** What log-probs the engine returns, recorded with each turn. */
  logprobsMode: LogprobsMode;
}

/** How long an episode waits for hosts that may be dead (`worker.*` in the configuration). */
export interface EpisodeTimeouts {
  /** Work for a sandbox's host waits this long for its worker before the attempt fails, ms. */
  scheduleToStartMs: number;
  /** An attempt's cleanup on its host gives up after this long, ms. */
  cleanupWindowMs: number;
}

export interface EpisodeInput {
  batchId: string;
  groupId: string;
  /** Task source: `builtin`, a pack directory or a task file, as seen by workers. */
  taskSource: string;
  taskId: string;
  episodeIndex: number;
  agentName: string;
  limits: EpisodeLimits;
  sampling: Sampling;
  /** Default `EPISODE_TIMEOUT_DEFAULTS` (workflows/episode-timeouts.ts). */
  timeouts?: EpisodeTimeouts;
}

export type EpisodeOutcome = 'ok' | 'infra_error';

export interface EpisodeSummary {
  episodeId: string;
  groupId: string;
  episodeIndex: number;
  outcome: EpisodeOutcome;
  reward: number | null;
  /** Why the agent stopped (stop, max_turns, ...) or what the infrastructure failure was. */
  reason: string;
  turns: number;
  tokens: number;
  attempts: number;
  /** Oldest policy version that sampled a token of the episode; null when no token was sampled. */
  minVersion: number | null;
  /** Newest policy version that sampled a token of the episode; null when no token was sampled. */
  maxVersion: number | null;
}

export interface EpisodeStatus {
  phase: 'admitting' | 'creating_sandbox' | 'agent' | 'reward' | 'closing' | 'done';
  attempt: number;
  instance: string | null;
  turns: number;
  toolCalls: number;
  outcome: EpisodeOutcome | null;
  reward: number | null;
}

export interface SandboxRef {
  sandboxId: string;
  /** Task queue of the worker whose host holds the sandbox. */
  hostQueue: string;
}

/** The small part of a RewardResult that goes through Temporal and into `rewardInfo`. */
export interface RewardSummary {
  reward: number;
  resolved: boolean;
  reason: string;
  passed: number;
  failed: number;
  /** RewardResult's suite-baseline fields: a count, a capped list of ids, a short reason. */
  suiteTests?: number;
  suiteBroken?: string[];
  suiteSkipped?: string;
  /**
   * The model judge's counts, cost and verdict (judge rewards, audits), with the URI of its full
   * record; it reaches `reward_info` with the rest of this summary.
   */
  judge?: JudgeSummary;
  /** Canary tests that guarded the run (0: none could be added). Absent in older summaries. */
  canaries?: number;
  /**
   * Outcome of the graded tests, at most `REWARD_TESTS_SHOWN` of them, those not passed first
   * (the counts above cover all). Absent in older summaries.
   */
  tests?: Record<string, 'passed' | 'failed' | 'missing'>;
  /** What the static screen flagged when it made the episode `tampered` (at most 20 findings). */
  screen?: { rule: string; path: string; line: number; text: string }[];
}

/** Most graded tests a RewardSummary names: a summary travels through Temporal and stays small. */
export const REWARD_TESTS_SHOWN = 50;

/** What to do with an episode sampled by a policy more than `maxStaleness` versions old. */
export type StaleAction = 'drop' | 'rerun';

/**
 * What starts a batch: the one JSON object argument of `batchWorkflow` (a Python trainer sends it
 * with the Temporal SDK). Only `taskIds` and `n` are required; the workflow applies the defaults
 * of workflows/batch-request.ts to the rest.
 */
export interface BatchRequest {
  /** Default: the workflow id. */
  batchId?: string;
  /** `builtin`, a task pack directory or a task file, as seen by workers. Default `builtin`. */
  taskSource?: string;
  taskIds: string[];
  /** Samples per task (the GRPO group size). */
  n: number;
  /** `builtin` or a black-box agent preset. Default `builtin`. */
  agentName?: string;
  /** Episodes running at once. Default 8. */
  concurrency?: number;
  /** Mark groups whose rewards are all equal as `filtered` and export no file for them. Default true. */
  filterUniformGroups?: boolean;
  /** Per-episode limits; each missing key takes its default. */
  limits?: Partial<EpisodeLimits>;
  /** Sampling parameters; each missing key takes its default. */
  sampling?: Partial<Sampling>;
  /** How long a dead host's work and cleanup may wait; each missing key takes its default. */
  timeouts?: Partial<EpisodeTimeouts>;
  /**
   * Continue-as-new once the batch's history has this many events, so a 10,000-episode batch never
   * nears Temporal's 51,200-event limit. Default 8,000.
   */
  continueAfterEvents?: number;
  /** Policy versions an episode's oldest token may lag the current version. Default: no bound. */
  maxStaleness?: number | null;
  /** What happens to a stale episode. Default `drop` (a failure with reason `stale`). */
  staleAction?: StaleAction;
}

/** A BatchRequest with every default applied: what the batch workflow runs on. */
export interface BatchInput {
  batchId: string;
  taskSource: string;
  taskIds: string[];
  n: number;
  agentName: string;
  concurrency: number;
  filterUniformGroups: boolean;
  limits: EpisodeLimits;
  sampling: Sampling;
  /** Passed to every episode; default `EPISODE_TIMEOUT_DEFAULTS` (workflows/episode-timeouts.ts). */
  timeouts?: EpisodeTimeouts;
  continueAfterEvents: number;
  maxStaleness: number | null;
  staleAction: StaleAction;
}

export interface GroupFailure {
  episode_index: number;
  reason: string;
}

/** One written Arrow IPC stream file, as listed in the batch manifest. */
export interface ManifestFile {
  uri: string;
  format: 'arrow-stream';
  rows: number;
  sha256: string;
}

/**
 * `export_failed`: the group finished, but its file could not be written whole (rows of ok
 * episodes missing after retries); `missing_episode_ids` names them and the batch is `partial`.
 */
export type GroupStatus = 'finished' | 'failure' | 'filtered' | 'export_failed';

/**
 * A group some of whose samples have ended, not all: what the batch workflow keeps of it until
 * the rest end. Each sample's reward or failure is in the store, not here.
 */
export interface OpenGroup {
  taskIndex: number;
  /** Samples ended so far. */
  ended: number;
  /** Of them, ok (with a reward). */
  ok: number;
  /** The first ok reward, and whether every ok reward so far equals it (a uniform group may be filtered). */
  firstReward: number | null;
  uniform: boolean;
}

/**
 * What a batch run carries into its next run after continue-as-new: cursors and counts only, and
 * the groups left open (at most one: a run continues only once its running episodes ended). Its
 * size does not grow with the batch.
 */
export interface BatchCarry {
  /** Index (task × n + sample) of the next episode to launch. */
  nextIndex: number;
  startedAtMs: number;
  episodesOk: number;
  episodesFailed: number;
  rewardSum: number;
  tokens: number;
  stale: number;
  exportFailed: number;
  /** Groups finished and recorded in the store: the next group's finish position. */
  groupsFinished: number;
  open: OpenGroup[];
}

export interface ManifestGroup {
  group_id: string;
  task_id: string;
  n_requested: number;
  n_ok: number;
  status: GroupStatus;
  rewards: (number | null)[];
  failures: GroupFailure[];
  /** Only for `export_failed`: the ok episodes whose rows could not be exported. */
  missing_episode_ids?: string[];
}

/** A finished group as the `finishedGroups` update hands it over: the manifest group and its file. */
export interface FinishedGroup extends ManifestGroup {
  file: ManifestFile | null;
}

/** Input of the `finishedGroups` update: how many finished groups the caller has already seen. */
export interface FinishedGroupsRequest {
  after: number;
}

/** Answer of the `finishedGroups` update. */
export interface FinishedGroupsAnswer {
  groups: FinishedGroup[];
  /** The cursor to send next: `after` plus the groups handed over. */
  next: number;
  /** True once the batch has ended and every finished group up to `next` was handed over. */
  done: boolean;
}

/**
 * The batch manifest of ../shared/specs/trajectory.md. Groups are listed in the order they
 * finished (the order of the `finishedGroups` cursor), each with its file, and `files` lists the
 * per-group files in that order.
 */
export interface BatchManifest {
  schema: 'agent-rollout/v1';
  batch_id: string;
  /**
   * `complete`: every episode ok and every finished group's file whole; `partial`: some episode
   * failed or some group is `export_failed`.
   */
  status: 'complete' | 'partial' | 'cancelled';
  /** Empty when `manifest_uri` is set. */
  groups: FinishedGroup[];
  /** Empty when `manifest_uri` is set. */
  files: ManifestFile[];
  /**
   * Set for a manifest too large for a workflow result (see activities/batch-results.ts): the
   * whole manifest, as JSON, is at this URI of the artifact store; `groups` and `files` are empty.
   */
  manifest_uri?: string;
  stats: {
    episodes: number;
    chains: number;
    tokens: number;
    wall_s: number;
    stale: number;
    export_failed: number;
  };
}

export interface BatchProgress {
  batchId: string;
  /** Always `done + running + queued`. */
  total: number;
  started: number;
  running: number;
  /** Episodes ended: `ok + infraErrors`. */
  done: number;
  ok: number;
  infraErrors: number;
  /** Episodes not started yet (after a cancellation: none, they ended `cancelled`). */
  queued: number;
  /** When the batch's first run started (workflow time, ms since the epoch): the base of throughput. */
  startedAtMs: number;
  meanReward: number | null;
  /** Groups whose every sample has ended (the `finishedGroups` cursor can reach this). */
  groupsFinished: number;
  /** Episodes found stale: dropped or re-run. */
  stale: number;
  /** Groups whose file could not be written whole. */
  exportFailed: number;
}
