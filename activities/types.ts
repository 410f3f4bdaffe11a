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

export interface Sampling {
  temperature: number;
  topP: number;
  /** Default output tokens of one model call when the agent does not say. */
  maxTokens: number;
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

export interface RewardSummary {
  reward: number;
  resolved: boolean;
  reason: string;
  passed: number;
  failed: number;
}

export interface BatchInput {
  batchId: string;
  taskSource: string;
  taskIds: string[];
  /** Samples per task (the GRPO group size). */
  n: number;
  agentName: string;
  /** Episodes running at once. */
  concurrency: number;
  /** Mark groups whose rewards are all equal as `filtered` and leave them out of the files. */
  filterUniformGroups: boolean;
  limits: EpisodeLimits;
  sampling: Sampling;
  /**
   * Continue-as-new once the batch's history has this many events, so a 10,000-episode batch never
   * nears Temporal's 51,200-event limit. Default 8,000.
   */
  continueAfterEvents?: number;
}

export interface GroupState {
  groupId: string;
  taskId: string;
  rewards: (number | null)[];
  failures: { episode_index: number; reason: string }[];
}

/** What a batch run carries into its next run after continue-as-new. */
export interface BatchCarry {
  nextIndex: number;
  groups: GroupState[];
  startedAtMs: number;
  episodesOk: number;
  tokens: number;
}

export interface ManifestGroup {
  group_id: string;
  task_id: string;
  n_requested: number;
  n_ok: number;
  status: 'finished' | 'failure' | 'filtered';
  rewards: (number | null)[];
  failures: { episode_index: number; reason: string }[];
}

/** The batch manifest of ../shared/specs/trajectory.md. */
export interface BatchManifest {
  schema: 'agent-rollout/v1';
  batch_id: string;
  status: 'complete' | 'partial' | 'cancelled';
  groups: ManifestGroup[];
  files: { uri: string; format: 'arrow-stream'; rows: number; sha256: string }[];
  stats: { episodes: number; chains: number; tokens: number; wall_s: number };
}

export interface BatchProgress {
  batchId: string;
  total: number;
  started: number;
  running: number;
  done: number;
  ok: number;
  infraErrors: number;
  meanReward: number | null;
}
