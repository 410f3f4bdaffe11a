import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { packFloat32, packInt32, unpackFloat32, unpackInt32 } from './codec.js';
import { ADDED_COLUMNS, SCHEMA_SQL } from './schema.js';

/** Who a gateway session belongs to; fixed when the session opens. */
export interface SessionInfo {
  batchId: string;
  taskId: string;
  groupId: string;
  episodeIndex: number;
  agentName: string;
  /** Engine instance the scheduler chose for this episode. */
  homeInstance: string;
  budgets: { maxTurns: number; maxContextTokens: number; maxWallTimeMs: number };
  sampling: { temperature: number; topP: number; maxTokens: number };
}

export interface SessionRecord {
  sessionId: string;
  key: string;
  episodeId: string;
  attempt: number;
  info: SessionInfo;
  status: 'open' | 'closed';
  terminationReason: string | null;
  createdAt: number;
  closedAt: number | null;
}

/** One model call committed to a chain: the prompt tokens it appended and what it sampled. */
export interface StoredTurn {
  sessionId: string;
  chainIndex: number;
  /** Order of commits in the chain, rolled-back turns included. */
  seq: number;
  /** Position in the chain after rollbacks. */
  turnIndex: number;
  promptDelta: number[];
  sampled: number[];
  logprobs: number[];
  finishReason: string;
  cachedTokens: number;
  /** Policy version of the turn's last sampled token (the version it committed on). */
  version: number;
  /**
   * Policy version that sampled each token of \`sampled\`: a turn aborted by a pause and resumed
   * after a weight update holds two versions.
   */
  sampledVersions: number[];
  tLlmS: number;
  /** Canonical messages this turn appended to the chain's history (JSON). */
  messagesJson: string;
  /** Canonical assistant message this turn produced (JSON). */
  replyJson: string;
  toolsJson: string | null;
  rolledBack: boolean;
}

/**
 * An OpenAI Responses answer kept for `previous_response_id`: the full input it continued (earlier
 * responses already prepended) and its output items, both as JSON arrays of items.
 */
export interface StoredResponse {
  sessionId: string;
  responseId: string;
  inputJson: string;
  outputJson: string;
}

/**
 * The drift check of one chain at close: where a full render of the chain's history with the chat
 * template first differs from the tokens the engine saw (-1: nowhere), and how many live turns
 * were sampled after that point.
 */
export interface ChainReport {
  chainIndex: number;
  driftOffset: number;
  driftTurns: number;
}

/** How an episode ended, written once by the episode's close step. */
export interface EpisodeRecord {
  episodeId: string;
  batchId: string;
  taskId: string;
  groupId: string;
  episodeIndex: number;
  agentName: string;
  /** The gateway session of the attempt that counts; null when no attempt got that far. */
  sessionId: string | null;
  outcome: 'ok' | 'infra_error';
  terminationReason: string;
  reward: number | null;
  rewardInfo: Record<string, unknown>;
  numTurns: number;
  numToolCalls: number;
  tEpisodeS: number;
  tEnvS: number;
}

/** The gateway's policy state: the weight version engines serve, and whether generation is paused. */
export interface PolicyState {
  version: number;
  paused: boolean;
}

/**
 * The trajectory store: gateway sessions, their committed turns and episode outcomes, in one
 * SQLite file shared by the gateway and the workers (WAL mode, so readers never block the writer).
 */
export class TrajectoryStore {
  private constructor(readonly db: Database.Database) {}

  static open(file: string): TrajectoryStore {
    if (file !== ':memory:') mkdirSync(path.dirname(file), { recursive: true });
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.pragma('busy_timeout = 10000');
    db.pragma('synchronous = NORMAL');
    db.exec(SCHEMA_SQL);
    for (const { table, column, definition } of ADDED_COLUMNS) {
      const columns = db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[];
      if (!columns.some((c) => c.name === column)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${definition}`);
    }
    return new TrajectoryStore(db);
  }

  /** The stored policy state; version 0, not paused, before the first pause or resume. */
  loadPolicy(): PolicyState {
    const row = this.db.prepare('SELECT version, paused FROM policy WHERE id = 0').get() as { version: number; paused: number } | undefined;
    return row ? { version: row.version, paused: row.paused === 1 } : { version: 0, paused: false };
  }

  savePolicy(state: PolicyState): void {
    this.db
      .prepare(
        `INSERT INTO policy (id, version, paused, updated_at) VALUES (0, ?, ?, ?)
         ON CONFLICT(id) DO UPDATE SET version = excluded.version, paused = excluded.paused, updated_at = excluded.updated_at`,
      )
      .run(state.version, state.paused ? 1 : 0, Date.now());
  }

  /** Idempotent: a retried open with the same id returns the session the first call made. */
  createSession(s: { sessionId: string; key: string; episodeId: string; attempt: number; info: SessionInfo }): SessionRecord {
    this.db
      .prepare(
        `INSERT OR IGNORE INTO sessions (session_id, key, episode_id, attempt, info_json, created_at)
         VALUES (?, ?, ?, ?, ?, ?)`,
      )
      .run(s.sessionId, s.key, s.episodeId, s.attempt, JSON.stringify(s.info), Date.now());
    const record = this.getSession(s.sessionId);
    if (!record) throw new Error(`session ${s.sessionId} was not stored`);
    return record;
  }

  getSession(sessionId: string): SessionRecord | undefined {
    const row = this.db.prepare('SELECT * FROM sessions WHERE session_id = ?').get(sessionId);
    return row ? toSession(row as SessionRow) : undefined;
  }

  getSessionByKey(key: string): SessionRecord | undefined {
    const row = this.db.prepare('SELECT * FROM sessions WHERE key = ?').get(key);
    return row ? toSession(row as SessionRow) : undefined;
  }

  closeSession(sessionId: string, terminationReason: string): void {
    this.db
      .prepare(
        `UPDATE sessions SET status = 'closed', termination_reason = COALESCE(termination_reason, ?),
         closed_at = COALESCE(closed_at, ?) WHERE session_id = ?`,
      )
      .run(terminationReason, Date.now(), sessionId);
  }

  private appendTurn(turn: StoredTurn): void {
    this.db
      .prepare(
        `INSERT INTO turns (session_id, chain_index, seq, turn_index, prompt_delta, sampled, logprobs,
           finish_reason, cached_tokens, version, sampled_versions, t_llm_s, messages_json, reply_json,
           tools_json, rolled_back, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        turn.sessionId,
        turn.chainIndex,
        turn.seq,
        turn.turnIndex,
        packInt32(turn.promptDelta),
        packInt32(turn.sampled),
        packFloat32(turn.logprobs),
        turn.finishReason,
        turn.cachedTokens,
        turn.version,
        packInt32(turn.sampledVersions),
        turn.tLlmS,
        turn.messagesJson,
        turn.replyJson,
        turn.toolsJson,
        turn.rolledBack ? 1 : 0,
        Date.now(),
      );
  }

  /** Writes a turn and, in the same transaction, marks the turn it replaces as rolled back. */
  commitTurn(turn: StoredTurn, rolledBackSeq?: number): void {
    this.db.transaction(() => {
      if (rolledBackSeq !== undefined) {
        this.db
          .prepare('UPDATE turns SET rolled_back = 1 WHERE session_id = ? AND chain_index = ? AND seq = ?')
          .run(turn.sessionId, turn.chainIndex, rolledBackSeq);
      }
      this.appendTurn(turn);
    })();
  }

  /** Every turn of a session, rolled-back ones included, in chain and commit order. */
  loadTurns(sessionId: string): StoredTurn[] {
    const rows = this.db
      .prepare('SELECT * FROM turns WHERE session_id = ? ORDER BY chain_index, seq')
      .all(sessionId) as TurnRow[];
    return rows.map(toTurn);
  }

  saveResponse(r: StoredResponse): void {
    this.db
      .prepare(
        `INSERT OR REPLACE INTO responses (session_id, response_id, input_json, output_json, created_at)
         VALUES (?, ?, ?, ?, ?)`,
      )
      .run(r.sessionId, r.responseId, r.inputJson, r.outputJson, Date.now());
  }

  /** A stored response of this session only: a key never sees another session's responses. */
  getResponse(sessionId: string, responseId: string): StoredResponse | undefined {
    const row = this.db
      .prepare('SELECT input_json, output_json FROM responses WHERE session_id = ? AND response_id = ?')
      .get(sessionId, responseId) as { input_json: string; output_json: string } | undefined;
    return row ? { sessionId, responseId, inputJson: row.input_json, outputJson: row.output_json } : undefined;
  }

  saveChainReports(sessionId: string, reports: ChainReport[]): void {
    const insert = this.db.prepare(
      'INSERT OR REPLACE INTO chain_reports (session_id, chain_index, drift_offset, drift_turns) VALUES (?, ?, ?, ?)',
    );
    this.db.transaction(() => {
      for (const r of reports) insert.run(sessionId, r.chainIndex, r.driftOffset, r.driftTurns);
    })();
  }

  loadChainReports(sessionId: string): ChainReport[] {
    const rows = this.db
      .prepare('SELECT chain_index, drift_offset, drift_turns FROM chain_reports WHERE session_id = ? ORDER BY chain_index')
      .all(sessionId) as { chain_index: number; drift_offset: number; drift_turns: number }[];
    return rows.map((r) => ({ chainIndex: r.chain_index, driftOffset: r.drift_offset, driftTurns: r.drift_turns }));
  }

  /** Upsert: a retried close step rewrites the same row, so each episode is delivered once. */
  recordEpisode(e: EpisodeRecord): void {
    this.db
      .prepare(
        `INSERT INTO episodes (episode_id, batch_id, task_id, group_id, episode_index, agent_name,
           session_id, outcome, termination_reason, reward, reward_info_json, num_turns,
           num_tool_calls, t_episode_s, t_env_s, finished_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT(episode_id) DO UPDATE SET session_id = excluded.session_id,
           outcome = excluded.outcome, termination_reason = excluded.termination_reason,
           reward = excluded.reward, reward_info_json = excluded.reward_info_json,
           num_turns = excluded.num_turns, num_tool_calls = excluded.num_tool_calls,
           t_episode_s = excluded.t_episode_s, t_env_s = excluded.t_env_s,
           finished_at = excluded.finished_at`,
      )
      .run(
        e.episodeId,
        e.batchId,
        e.taskId,
        e.groupId,
        e.episodeIndex,
        e.agentName,
        e.sessionId,
        e.outcome,
        e.terminationReason,
        e.reward,
        JSON.stringify(e.rewardInfo),
        e.numTurns,
        e.numToolCalls,
        e.tEpisodeS,
        e.tEnvS,
        Date.now(),
      );
  }

  listEpisodes(batchId: string): EpisodeRecord[] {
    const rows = this.db
      .prepare('SELECT * FROM episodes WHERE batch_id = ? ORDER BY group_id, episode_index')
      .all(batchId) as EpisodeRow[];
    return rows.map(toEpisode);
  }

  /** The episodes of one group of a batch (re-runs included), in sample order. */
  listGroupEpisodes(batchId: string, groupId: string): EpisodeRecord[] {
    const rows = this.db
      .prepare('SELECT * FROM episodes WHERE batch_id = ? AND group_id = ? ORDER BY episode_index, episode_id')
      .all(batchId, groupId) as EpisodeRow[];
    return rows.map(toEpisode);
  }

  close(): void {
    this.db.close();
  }
}

interface SessionRow {
  session_id: string;
  key: string;
  episode_id: string;
  attempt: number;
  info_json: string;
  status: 'open' | 'closed';
  termination_reason: string | null;
  created_at: number;
  closed_at: number | null;
}

function toSession(r: SessionRow): SessionRecord {
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
  };
}

interface TurnRow {
  session_id: string;
  chain_index: number;
  seq: number;
  turn_index: number;
  prompt_delta: Buffer;
  sampled: Buffer;
  logprobs: Buffer;
  finish_reason: string;
  cached_tokens: number;
  version: number;
  sampled_versions: Buffer | null;
  t_llm_s: number;
  messages_json: string;
  reply_json: string;
  tools_json: string | null;
  rolled_back: number;
}

function toTurn(r: TurnRow): StoredTurn {
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
    version: r.version,
    sampledVersions: r.sampled_versions ? unpackInt32(r.sampled_versions) : sampled.map(() => r.version),
    tLlmS: r.t_llm_s,
    messagesJson: r.messages_json,
    replyJson: r.reply_json,
    toolsJson: r.tools_json,
    rolledBack: r.rolled_back === 1,
  };
}

interface EpisodeRow {
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

function toEpisode(r: EpisodeRow): EpisodeRecord {
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
