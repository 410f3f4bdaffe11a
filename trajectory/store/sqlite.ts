import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { packFloat32, packInt32 } from '../codec.js';
import { pickCandidate } from './pick-candidate.js';
import { toBatchGroup, toBatchResult, toEpisode, toRegistration, toReport, toSession, toTurn, type BatchGroupRow, type BatchResultRow, type EpisodeRow, type RegistrationRow, type ReportRow, type SessionRow, type TurnRow } from './rows.js';
import { LEGACY_ADDED_COLUMNS, SQLITE_MIGRATIONS } from './sqlite-migrations.js';
import { BackgroundCheckpointer } from './sqlite-checkpointer.js';
import { StatementCache } from './sqlite-statements.js';
import {
  StoreConflictError,
  type AdmissionCandidate,
  type AdmissionLease,
  type BatchGroupRecord,
  type BatchResult,
  type ChainReport,
  type EpisodeRecord,
  type PolicyState,
  type Registration,
  type SessionInfo,
  type SessionRecord,
  type Store,
  type StoredReport,
  type StoredResponse,
  type StoredTurn,
} from './types.js';

type CommitOptions = { rolledBackSeq?: number; owner?: string };

/**
 * Applies the migrations this file has not seen yet, each in its own transaction. Whether a
 * migration is applied is read inside its write transaction: a process that opened the file at
 * the same moment may have applied it while this one waited for the lock.
 */
function migrate(db: Database.Database): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
  const isApplied = db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?');
  for (const migration of SQLITE_MIGRATIONS) {
    db.transaction(() => {
      if (isApplied.get(migration.version) !== undefined) return;
      db.exec(migration.sql);
      if (migration.version === 1) {
        for (const { table, column, definition } of LEGACY_ADDED_COLUMNS) {
          const columns = db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[];
          if (!columns.some((c) => c.name === column)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${definition}`);
        }
      }
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(migration.version, migration.name, Date.now());
    }).immediate();
  }
}

/** How long opening waits for other connections' locks on the file, ms. */
const OPEN_WAIT_MS = 10_000;
/** Between attempts to switch a file to WAL, ms. */
const WAL_RETRY_MS = 20;

/**
 * Switches the file to WAL. While another connection holds a lock on it (processes opening a new
 * store file together) the switch fails with SQLITE_BUSY at once, without waiting on the busy
 * timeout, so it is tried again until OPEN_WAIT_MS has passed.
 */
function enableWal(db: Database.Database): void {
  const deadline = Date.now() + OPEN_WAIT_MS;
  for (;;) {
    try {
      db.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if (!(error instanceof Database.SqliteError && error.code === 'SQLITE_BUSY') || Date.now() >= deadline) throw error;
      // Opening is synchronous: a short blocking sleep, as SQLite's own busy handler does.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, WAL_RETRY_MS);
    }
  }
}

/**
 * The store in one SQLite file (WAL mode, so readers never block the writer): every process on
 * one machine that opens the same file shares it. The embedded default; PostgreSQL is the
 * backend for many machines.
 */
export class SqliteStore implements Store {
  readonly backend = 'sqlite' as const;

  /** Every statement prepared once, on first use. */
  private readonly sql: StatementCache;
  /** WAL checkpoints in a worker thread (none for an in-memory database). */
  private checkpointer: BackgroundCheckpointer | undefined;
  // Each transaction function wrapped once: better-sqlite3 builds four wrappers per `transaction` call.
  private readonly pauseTx: Database.Transaction<() => PolicyState>;
  private readonly resumeTx: Database.Transaction<(version: number) => { applied: boolean; state: PolicyState }>;
  private readonly commitTurnTx: Database.Transaction<(turn: StoredTurn, options: CommitOptions, now: number) => void>;
  private readonly saveChainReportsTx: Database.Transaction<(sessionId: string, reports: ChainReport[]) => void>;
  private readonly admitTx: Database.Transaction<
    (episodeId: string, candidates: AdmissionCandidate[], ttlMs: number, now: number) => AdmissionLease | undefined
  >;
  private readonly ackGroupsTx: Database.Transaction<(batchId: string, groupIds: string[]) => void>;
  private readonly forgetRegistrationsTx: Database.Transaction<(kind: Registration['kind'], before: number) => Registration[]>;

  private constructor(readonly db: Database.Database) {
    this.sql = new StatementCache(db);
    this.pauseTx = db.transaction(() => {
      const state = { ...this.policyNow(), paused: true };
      this.writePolicy(state);
      return state;
    });
    this.resumeTx = db.transaction((version: number) => {
      const stored = this.policyNow();
      if (version < stored.version) return { applied: false, state: stored };
      const state = { version, paused: false };
      this.writePolicy(state);
      return { applied: true, state };
    });
    this.commitTurnTx = db.transaction((turn: StoredTurn, options: CommitOptions, now: number) => {
      if (options.owner !== undefined) {
        const owned = this.sql
          .get('SELECT 1 FROM sessions WHERE session_id = ? AND owner = ? AND owner_until > ?')
          .get(turn.sessionId, options.owner, now);
        if (!owned) throw new StoreConflictError(`session ${turn.sessionId} is not owned by ${options.owner}`);
      }
      if (options.rolledBackSeq !== undefined) {
        this.sql
          .get('UPDATE turns SET rolled_back = 1 WHERE session_id = ? AND chain_index = ? AND seq = ?')
          .run(turn.sessionId, turn.chainIndex, options.rolledBackSeq);
      }
      this.appendTurn(turn);
    });
    this.saveChainReportsTx = db.transaction((sessionId: string, reports: ChainReport[]) => {
      const insert = this.sql.get('INSERT OR REPLACE INTO chain_reports (session_id, chain_index, drift_offset, drift_turns) VALUES (?, ?, ?, ?)');
      for (const r of reports) insert.run(sessionId, r.chainIndex, r.driftOffset, r.driftTurns);
    });
    this.admitTx = db.transaction((episodeId: string, candidates: AdmissionCandidate[], ttlMs: number, now: number): AdmissionLease | undefined => {
      const held = this.sql
        .get('SELECT instance, expires_at FROM admission_leases WHERE episode_id = ? AND expires_at > ?')
        .get(episodeId, now) as { instance: string; expires_at: number } | undefined;
      if (held) return { episodeId, instance: held.instance, expiresAt: held.expires_at };
      this.sql.get('DELETE FROM admission_leases WHERE expires_at <= ?').run(now);
      const rows = this.sql.get('SELECT instance, COUNT(*) AS n FROM admission_leases GROUP BY instance').all() as { instance: string; n: number }[];
      const running = new Map(rows.map((r) => [r.instance, r.n]));
      const pick = pickCandidate(candidates, running);
      if (!pick) return undefined;
      const expiresAt = now + ttlMs;
      this.sql.get('INSERT OR REPLACE INTO admission_leases (episode_id, instance, expires_at) VALUES (?, ?, ?)').run(episodeId, pick, expiresAt);
      return { episodeId, instance: pick, expiresAt };
    });
    this.ackGroupsTx = db.transaction((batchId: string, groupIds: string[]) => {
      const next = (this.sql.get('SELECT COALESCE(MAX(position), -1) + 1 AS next FROM batch_acks WHERE batch_id = ?').get(batchId) as { next: number }).next;
      const insert = this.sql.get('INSERT OR IGNORE INTO batch_acks (batch_id, group_id, position) VALUES (?, ?, ?)');
      let position = next;
      for (const groupId of groupIds) if (insert.run(batchId, groupId, position).changes === 1) position++;
    });
    this.forgetRegistrationsTx = db.transaction((kind: Registration['kind'], before: number) => {
      const rows = this.sql.get('SELECT * FROM registrations WHERE kind = ? AND last_seen_at <= ? ORDER BY id').all(kind, before) as RegistrationRow[];
      this.sql.get('DELETE FROM registrations WHERE kind = ? AND last_seen_at <= ?').run(kind, before);
      return rows.map(toRegistration);
    });
  }

  /** Opens (creating when missing) the store file and applies pending migrations. */
  static open(file: string): SqliteStore {
    if (file !== ':memory:') mkdirSync(path.dirname(file), { recursive: true });
    const db = new Database(file);
    db.pragma(`busy_timeout = ${OPEN_WAIT_MS}`);
    enableWal(db);
    db.pragma('synchronous = NORMAL');
    migrate(db);
    const store = new SqliteStore(db);
    if (file !== ':memory:') store.checkpointer = BackgroundCheckpointer.start(db, file);
    return store;
  }

  /** Migration versions applied, in order. */
  async migrations(): Promise<number[]> {
    return (this.sql.get('SELECT version FROM schema_migrations ORDER BY version').all() as { version: number }[]).map((r) => r.version);
  }

  async loadPolicy(): Promise<PolicyState> {
    return this.policyNow();
  }

  private policyNow(): PolicyState {
    const row = this.sql.get('SELECT version, paused FROM policy WHERE id = 0').get() as { version: number; paused: number } | undefined;
    return row ? { version: row.version, paused: row.paused === 1 } : { version: 0, paused: false };
  }

  private writePolicy(state: PolicyState): void {
    this.sql
      .get(
        `INSERT INTO policy (id, version, paused, updated_at) VALUES (0, ?, ?, ?)
         ON CONFLICT(id) DO UPDATE SET version = excluded.version, paused = excluded.paused, updated_at = excluded.updated_at`,
      )
      .run(state.version, state.paused ? 1 : 0, Date.now());
  }

  async pausePolicy(): Promise<PolicyState> {
    return this.pauseTx.immediate();
  }

  async resumePolicy(version: number): Promise<{ applied: boolean; state: PolicyState }> {
    return this.resumeTx.immediate(version);
  }

  async createSession(s: { sessionId: string; key: string; episodeId: string; attempt: number; info: SessionInfo }): Promise<SessionRecord> {
    this.sql
      .get(
        `INSERT OR IGNORE INTO sessions (session_id, key, episode_id, attempt, info_json, created_at)
         VALUES (?, ?, ?, ?, ?, ?)`,
      )
      .run(s.sessionId, s.key, s.episodeId, s.attempt, JSON.stringify(s.info), Date.now());
    const record = await this.getSession(s.sessionId);
    if (!record) throw new Error(`session ${s.sessionId} was not stored`);
    return record;
  }

  async getSession(sessionId: string): Promise<SessionRecord | undefined> {
    const row = this.sql.get('SELECT * FROM sessions WHERE session_id = ?').get(sessionId);
    return row ? toSession(row as SessionRow) : undefined;
  }

  async getSessionByKey(key: string): Promise<SessionRecord | undefined> {
    const row = this.sql.get('SELECT * FROM sessions WHERE key = ?').get(key);
    return row ? toSession(row as SessionRow) : undefined;
  }

  async closeSession(sessionId: string, terminationReason: string): Promise<void> {
    this.sql
      .get(
        `UPDATE sessions SET status = 'closed', termination_reason = COALESCE(termination_reason, ?),
         closed_at = COALESCE(closed_at, ?) WHERE session_id = ?`,
      )
      .run(terminationReason, Date.now(), sessionId);
  }

  async claimSession(sessionId: string, owner: string, ttlMs: number, now = Date.now()): Promise<boolean> {
    const result = this.sql
      .get(
        `UPDATE sessions SET owner = ?, owner_until = ?
         WHERE session_id = ? AND (owner IS NULL OR owner = ? OR owner_until <= ?)`,
      )
      .run(owner, now + ttlMs, sessionId, owner, now);
    return result.changes === 1;
  }

  async renewSessions(owner: string, ttlMs: number, now = Date.now()): Promise<void> {
    this.sql.get(`UPDATE sessions SET owner_until = ? WHERE owner = ? AND status = 'open'`).run(now + ttlMs, owner);
  }

  private appendTurn(turn: StoredTurn): void {
    this.sql
      .get(
        `INSERT INTO turns (session_id, chain_index, seq, turn_index, prompt_delta, sampled, logprobs,
           finish_reason, cached_tokens, version, sampled_versions, t_llm_s, messages_json, reply_json,
           tools_json, rolled_back, created_at, temperature, logprobs_mode)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
        turn.temperature,
        turn.logprobsMode,
      );
  }

  async commitTurn(turn: StoredTurn, options: CommitOptions = {}): Promise<void> {
    try {
      this.commitTurnTx.immediate(turn, options, Date.now());
    } catch (error) {
      if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
        throw new StoreConflictError(`turn ${turn.seq} of chain ${turn.chainIndex} of session ${turn.sessionId} is already committed`);
      }
      throw error;
    }
  }

  async loadTurns(sessionId: string): Promise<StoredTurn[]> {
    const rows = this.sql
      .get('SELECT * FROM turns WHERE session_id = ? ORDER BY chain_index, seq')
      .all(sessionId) as TurnRow[];
    return rows.map(toTurn);
  }

  async saveResponse(r: StoredResponse): Promise<void> {
    this.sql
      .get(
        `INSERT OR REPLACE INTO responses (session_id, response_id, input_json, output_json, created_at)
         VALUES (?, ?, ?, ?, ?)`,
      )
      .run(r.sessionId, r.responseId, r.inputJson, r.outputJson, Date.now());
  }

  async getResponse(sessionId: string, responseId: string): Promise<StoredResponse | undefined> {
    const row = this.sql
      .get('SELECT input_json, output_json FROM responses WHERE session_id = ? AND response_id = ?')
      .get(sessionId, responseId) as { input_json: string; output_json: string } | undefined;
    return row ? { sessionId, responseId, inputJson: row.input_json, outputJson: row.output_json } : undefined;
  }

  async saveChainReports(sessionId: string, reports: ChainReport[]): Promise<void> {
    this.saveChainReportsTx(sessionId, reports);
  }

  async loadChainReports(sessionId: string): Promise<ChainReport[]> {
    const rows = this.sql
      .get('SELECT chain_index, drift_offset, drift_turns FROM chain_reports WHERE session_id = ? ORDER BY chain_index')
      .all(sessionId) as { chain_index: number; drift_offset: number; drift_turns: number }[];
    return rows.map((r) => ({ chainIndex: r.chain_index, driftOffset: r.drift_offset, driftTurns: r.drift_turns }));
  }

  async recordEpisode(e: EpisodeRecord): Promise<void> {
    this.sql
      .get(
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

  async listEpisodes(batchId: string): Promise<EpisodeRecord[]> {
    const rows = this.sql
      .get('SELECT * FROM episodes WHERE batch_id = ? ORDER BY group_id, episode_index')
      .all(batchId) as EpisodeRow[];
    return rows.map(toEpisode);
  }

  async listGroupEpisodes(batchId: string, groupId: string): Promise<EpisodeRecord[]> {
    const rows = this.sql
      .get('SELECT * FROM episodes WHERE batch_id = ? AND group_id = ? ORDER BY episode_index, episode_id')
      .all(batchId, groupId) as EpisodeRow[];
    return rows.map(toEpisode);
  }

  async tryAdmit(episodeId: string, candidates: AdmissionCandidate[], ttlMs: number, now = Date.now()): Promise<AdmissionLease | undefined> {
    // IMMEDIATE: the write lock is taken before counting, so two processes never fill one slot twice.
    return this.admitTx.immediate(episodeId, candidates, ttlMs, now);
  }

  async renewLease(episodeId: string, instance: string, ttlMs: number, now = Date.now()): Promise<void> {
    this.sql.get('INSERT OR REPLACE INTO admission_leases (episode_id, instance, expires_at) VALUES (?, ?, ?)').run(episodeId, instance, now + ttlMs);
  }

  async releaseLease(episodeId: string): Promise<void> {
    this.sql.get('DELETE FROM admission_leases WHERE episode_id = ?').run(episodeId);
  }

  async releaseLeasesWithPrefix(prefix: string): Promise<number> {
    return this.sql.get('DELETE FROM admission_leases WHERE substr(episode_id, 1, ?) = ?').run(prefix.length, prefix).changes;
  }

  async listLeases(now = Date.now()): Promise<AdmissionLease[]> {
    const rows = this.sql
      .get('SELECT episode_id, instance, expires_at FROM admission_leases WHERE expires_at > ? ORDER BY episode_id')
      .all(now) as { episode_id: string; instance: string; expires_at: number }[];
    return rows.map((r) => ({ episodeId: r.episode_id, instance: r.instance, expiresAt: r.expires_at }));
  }

  async capLeases(ttlMs: number, now = Date.now()): Promise<void> {
    const latest = now + ttlMs;
    this.sql.get('UPDATE admission_leases SET expires_at = ? WHERE expires_at > ?').run(latest, latest);
  }

  async ackGroups(batchId: string, groupIds: string[]): Promise<string[]> {
    this.ackGroupsTx.immediate(batchId, groupIds);
    return this.ackedGroups(batchId);
  }

  async ackedGroups(batchId: string): Promise<string[]> {
    const rows = this.sql.get('SELECT group_id FROM batch_acks WHERE batch_id = ? ORDER BY position').all(batchId) as { group_id: string }[];
    return rows.map((r) => r.group_id);
  }

  async recordBatchResult(r: BatchResult): Promise<void> {
    this.sql
      .get(
        `INSERT INTO batch_results (batch_id, group_id, sample, episode_id, reward, failure) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT(batch_id, group_id, sample) DO UPDATE SET episode_id = excluded.episode_id, reward = excluded.reward, failure = excluded.failure`,
      )
      .run(r.batchId, r.groupId, r.sample, r.episodeId, r.reward, r.failure);
  }

  async listBatchResults(batchId: string, groupIds: string[]): Promise<BatchResult[]> {
    const rows = this.sql
      .get('SELECT * FROM batch_results WHERE batch_id = ? AND group_id IN (SELECT value FROM json_each(?)) ORDER BY group_id, sample')
      .all(batchId, JSON.stringify(groupIds)) as BatchResultRow[];
    return rows.map(toBatchResult);
  }

  async finishBatchGroup(g: BatchGroupRecord): Promise<void> {
    this.sql
      .get(
        `INSERT INTO batch_groups (batch_id, group_id, task_id, seq, n_requested, status, file_json, missing_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT(batch_id, group_id) DO UPDATE SET task_id = excluded.task_id, seq = excluded.seq, n_requested = excluded.n_requested,
           status = excluded.status, file_json = excluded.file_json, missing_json = excluded.missing_json`,
      )
      .run(g.batchId, g.groupId, g.taskId, g.seq, g.nRequested, g.status, g.fileJson, JSON.stringify(g.missingEpisodeIds));
  }

  async listBatchGroups(batchId: string, fromSeq: number, limit: number): Promise<BatchGroupRecord[]> {
    const rows = this.sql.get('SELECT * FROM batch_groups WHERE batch_id = ? AND seq >= ? ORDER BY seq LIMIT ?').all(batchId, fromSeq, limit) as BatchGroupRow[];
    return rows.map(toBatchGroup);
  }

  async saveReport(report: StoredReport): Promise<void> {
    this.sql
      .get('INSERT OR REPLACE INTO reports (report_id, batch_id, created_at, json) VALUES (?, ?, ?, ?)')
      .run(report.reportId, report.batchId, report.createdAt, report.json);
  }

  async listReports(batchId: string): Promise<StoredReport[]> {
    const rows = this.sql.get('SELECT * FROM reports WHERE batch_id = ? ORDER BY created_at, report_id').all(batchId) as ReportRow[];
    return rows.map(toReport);
  }

  async getReport(reportId: string): Promise<StoredReport | undefined> {
    const row = this.sql.get('SELECT * FROM reports WHERE report_id = ?').get(reportId) as ReportRow | undefined;
    return row ? toReport(row) : undefined;
  }

  async register(r: Registration): Promise<void> {
    this.sql
      .get(
        `INSERT INTO registrations (kind, id, address, last_seen_at) VALUES (?, ?, ?, ?)
         ON CONFLICT(kind, id) DO UPDATE SET address = excluded.address, last_seen_at = excluded.last_seen_at`,
      )
      .run(r.kind, r.id, r.address, r.lastSeenAt);
  }

  async listRegistrations(kind: Registration['kind'], maxAgeMs: number, now = Date.now()): Promise<Registration[]> {
    const rows = this.sql
      .get('SELECT * FROM registrations WHERE kind = ? AND last_seen_at > ? ORDER BY id')
      .all(kind, now - maxAgeMs) as RegistrationRow[];
    return rows.map(toRegistration);
  }

  async forgetRegistrations(kind: Registration['kind'], maxAgeMs: number, now = Date.now()): Promise<Registration[]> {
    return this.forgetRegistrationsTx.immediate(kind, now - maxAgeMs);
  }

  async close(): Promise<void> {
    await this.checkpointer?.close();
    this.db.close();
  }
}

