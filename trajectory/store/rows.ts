// Rows as both backends read them (PostgreSQL's BIGINT arrives as a number: see `postgres.ts`).
import type { LogprobsMode } from '../../activities/types.js';
import { unpackFloat32, unpackInt32 } from '../codec.js';
import type { BatchGroupRecord, BatchResult, EpisodeRecord, Registration, SessionInfo, SessionRecord, StoredReport, StoredTurn } from './types.js';

/** Columns of a `SessionRecord`. */
export const SESSION_COLUMNS = 'session_id, key, episode_id, attempt, info_json, status, termination_reason, created_at, closed_at, owner, owner_until';

export interface SessionRow {
  session_id: string;
  key: string;
  episode_id: string;
  attempt: number;
  info_json: string;
  status: 'open' | 'closed';
  termination_reason: string | null;
  created_at: number;
  closed_at: number | null;
  owner: string | null;
  owner_until: number | null;
}

export function toSession(r: SessionRow): SessionRecord {
  return {
    sessionId: r.session_id,
    key: r.key,
    episodeId: r.episode_id,
    attempt: r.attempt,
    info: JSON.parse(r.info_json) as SessionInfo,
    status: r.status,
    terminationReason: r.termination_reason,
    createdAt: r.created_at,
    closedAt: r.closed_at,
    owner: r.owner,
    ownerUntil: r.owner_until,
  };
}

export interface TurnRow {
  session_id: string;
  chain_index: number;
  seq: number;
  turn_index: number;
  prompt_delta: Buffer;
  sampled: Buffer;
  logprobs: Buffer;
  /** NULL in SQLite rows written before per-token versions: every token took `version`. */
  sampled_versions: Buffer | null;
  finish_reason: string;
  cached_tokens: number;
  /** NULL in rows written before migration 4 (SQLite) / 3 (PostgreSQL). */
  temperature: number | null;
  logprobs_mode: string | null;
  version: number;
  t_llm_s: number;
  messages_json: string;
  reply_json: string;
  tools_json: string | null;
  /** SQLite keeps it as 0 or 1, PostgreSQL as a boolean. */
  rolled_back: boolean | number;
}

export function toTurn(r: TurnRow): StoredTurn {
  const sampled = unpackInt32(r.sampled);
  return {
    sessionId: r.session_id,
    chainIndex: r.chain_index,
    seq: r.seq,
    turnIndex: r.turn_index,
    promptDelta: unpackInt32(r.prompt_delta),
    sampled,
    logprobs: unpackFloat32(r.logprobs),
    finishReason: r.finish_reason,
    cachedTokens: r.cached_tokens,
    temperature: r.temperature,
    logprobsMode: r.logprobs_mode === null ? null : logprobsModeOf(r.logprobs_mode),
    version: r.version,
    sampledVersions: r.sampled_versions ? unpackInt32(r.sampled_versions) : sampled.map(() => r.version),
    tLlmS: r.t_llm_s,
    messagesJson: r.messages_json,
    replyJson: r.reply_json,
    toolsJson: r.tools_json,
    rolledBack: r.rolled_back === true || r.rolled_back === 1,
  };
}

function logprobsModeOf(value: string): LogprobsMode {
  if (value === 'raw' || value === 'processed') return value;
  throw new Error(`a stored turn has log-prob mode ${JSON.stringify(value)}, neither raw nor processed`);
}

export interface EpisodeRow {
  episode_id: string;
  batch_id: string;
  task_id: string;
  group_id: string;
  episode_index: number;
  agent_name: string;
  session_id: string | null;
  outcome: 'ok' | 'infra_error';
  termination_reason: string;
  reward: number | null;
  reward_info_json: string;
  num_turns: number;
  num_tool_calls: number;
  t_episode_s: number;
  t_env_s: number;
}

export function toEpisode(r: EpisodeRow): EpisodeRecord {
  return {
    episodeId: r.episode_id,
    batchId: r.batch_id,
    taskId: r.task_id,
    groupId: r.group_id,
    episodeIndex: r.episode_index,
    agentName: r.agent_name,
    sessionId: r.session_id,
    outcome: r.outcome,
    terminationReason: r.termination_reason,
    reward: r.reward,
    rewardInfo: JSON.parse(r.reward_info_json) as Record<string, unknown>,
    numTurns: r.num_turns,
    numToolCalls: r.num_tool_calls,
    tEpisodeS: r.t_episode_s,
    tEnvS: r.t_env_s,
  };
}

export interface ReportRow {
  report_id: string;
  batch_id: string;
  created_at: number;
  json: string;
}

export function toReport(r: ReportRow): StoredReport {
  return { reportId: r.report_id, batchId: r.batch_id, createdAt: r.created_at, json: r.json };
}

export interface RegistrationRow {
  kind: Registration['kind'];
  id: string;
  address: string;
  last_seen_at: number;
}

export function toRegistration(r: RegistrationRow): Registration {
  return { kind: r.kind, id: r.id, address: r.address, lastSeenAt: r.last_seen_at };
}

export interface BatchResultRow {
  batch_id: string;
  group_id: string;
  sample: number;
  episode_id: string;
  reward: number | null;
  failure: string | null;
}

export function toBatchResult(r: BatchResultRow): BatchResult {
  return { batchId: r.batch_id, groupId: r.group_id, sample: r.sample, episodeId: r.episode_id, reward: r.reward, failure: r.failure };
}

export interface BatchGroupRow {
  batch_id: string;
  group_id: string;
  task_id: string;
  seq: number;
  n_requested: number;
  status: string;
  file_json: string | null;
  missing_json: string;
}

export function toBatchGroup(r: BatchGroupRow): BatchGroupRecord {
  return {
    batchId: r.batch_id,
    groupId: r.group_id,
    taskId: r.task_id,
    seq: r.seq,
    nRequested: r.n_requested,
    status: r.status,
    fileJson: r.file_json,
    missingEpisodeIds: JSON.parse(r.missing_json) as string[],
  };
}
