import pg from 'pg';
import { packFloat32, packInt32 } from '../codec.js';
import { pickCandidate } from './pick-candidate.js';
import { POSTGRES_MIGRATIONS } from './postgres-migrations.js';
import {
  SESSION_COLUMNS,
  toBatchGroup,
  toBatchResult,
  toEpisode,
  toRegistration,
  toReport,
  toSession,
  toTurn,
  type BatchGroupRow,
  type BatchResultRow,
  type EpisodeRow,
  type RegistrationRow,
  type ReportRow,
  type SessionRow,
  type TurnRow,
} from './rows.js';
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

export interface PostgresStoreOptions {
  /** Connections the store keeps open at most; calls beyond them queue. Default 10. */
  poolSize?: number;
  /** How long a call waits for a connection (a free one, or a new one to open) before failing. Default 30 000 ms. */
  connectionTimeoutMs?: number;
}

/** Keys of the transaction-scoped advisory locks (per database). */
const MIGRATION_LOCK = 7_310_001;
const ADMISSION_LOCK = 7_310_002;
/** With a batch id's hash as the second key: acknowledgements of one batch, one at a time. */
const ACK_LOCK_SPACE = 7_310_003;

/** PostgreSQL's unique_violation. */
const UNIQUE_VIOLATION = '23505';

/**
 * BIGINT (milliseconds, counts) as a JS number rather than pg's default string: every value the
 * store keeps in one is far below 2^53. Per pool, so other pg users in the process are unaffected.
 */
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8 && format !== 'binary' ? Number : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    client.release();
    return result;
  } catch (error) {
    // A connection that cannot even roll back is broken: destroy it rather than pool it.
    await client.query('ROLLBACK').then(
      () => client.release(),
      (rollbackError: Error) => client.release(rollbackError),
    );
    throw error;
  }
}

/**
 * Applies pending migrations in one transaction. The advisory lock makes a second process that
 * opens the store at the same moment wait, then find them applied.
 */
async function migrate(pool: pg.Pool): Promise<void> {
  await inTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)');
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations');
    const applied = new Set(rows.map((r) => r.version));
    for (const migration of POSTGRES_MIGRATIONS) {
      if (applied.has(migration.version)) continue;
      await client.query(migration.sql);
      await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [migration.version, migration.name, Date.now()]);
    }
  });
}

/**
 * One statement writes a turn: the rollback mark and the insert commit or fail together, and with
 * an owner the session row is read FOR SHARE, so a takeover (an UPDATE of that row) waits for
 * this commit and a commit after a takeover finds no owned row and inserts nothing. The casts
 * are needed because INSERT ... SELECT does not type bare parameters from the target columns.
 */
function commitTurnSql(fenced: boolean): string {
  const owned = fenced ? 'owned AS (SELECT 1 FROM sessions WHERE session_id = $1 AND owner = $21 AND owner_until > $22 FOR SHARE),' : '';
  const guard = fenced ? 'WHERE EXISTS (SELECT 1 FROM owned)' : '';
  return `WITH ${owned}
    marked AS (
      UPDATE turns SET rolled_back = true
      WHERE session_id = $1 AND chain_index = $2 AND seq = $18 ${fenced ? 'AND EXISTS (SELECT 1 FROM owned)' : ''}
    )
    INSERT INTO turns (session_id, chain_index, seq, turn_index, prompt_delta, sampled, logprobs,
      sampled_versions, finish_reason, cached_tokens, version, t_llm_s, messages_json, reply_json,
      tools_json, rolled_back, created_at, temperature, logprobs_mode)
    SELECT $1::text, $2::int, $3::int, $4::int, $5::bytea, $6::bytea, $7::bytea, $8::bytea, $9::text,
      $10::int, $11::int, $12::float8, $13::text, $14::text, $15::text, $16::bool, $17::bigint,
      $19::float8, $20::text
    ${guard}`;
}
// Named: each pooled connection parses and plans the per-turn statement once, then only binds it.
const COMMIT_TURN = { name: 'commit_turn', text: commitTurnSql(false) };
const COMMIT_OWNED_TURN = { name: 'commit_owned_turn', text: commitTurnSql(true) };

/**
 * The store in one PostgreSQL database, shared by every gateway, worker and API process on every
 * machine. Cross-process races are settled by the database: admission under an advisory lock,
 * turn commits fenced by session ownership, policy resumes by a conditional update.
 */
export class PostgresStore implements Store {
  readonly backend = 'postgres' as const;

  private constructor(private readonly pool: pg.Pool) {}

  /** Connects to `url` (`postgres://user@host:port/database`) and applies pending migrations. */
  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const pool = new pg.Pool({
      connectionString: url,
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: options.connectionTimeoutMs ?? 30_000,
      application_name: 'agent-rollout',
      types,
    });
    // An idle connection that dies (a server restart) is dropped by the pool and the next call
    // opens another; without a listener its error would crash the process.
    pool.on('error', () => undefined);
    try {
      await migrate(pool);
    } catch (error) {
      await pool.end();
      throw error;
    }
    return new PostgresStore(pool);
  }

  /** Migration versions applied, in order. */
  async migrations(): Promise<number[]> {
    const { rows } = await this.pool.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
    return rows.map((r) => r.version);
  }

  async loadPolicy(): Promise<PolicyState> {
    const { rows } = await this.pool.query<PolicyState>('SELECT version, paused FROM policy WHERE id = 0');
    return { version: rows[0]!.version, paused: rows[0]!.paused };
  }

  async pausePolicy(): Promise<PolicyState> {
    const { rows } = await this.pool.query<PolicyState>('UPDATE policy SET paused = true, updated_at = $1 WHERE id = 0 RETURNING version, paused', [Date.now()]);
    return { version: rows[0]!.version, paused: rows[0]!.paused };
  }

  async resumePolicy(version: number): Promise<{ applied: boolean; state: PolicyState }> {
    // The row lock of the UPDATE orders concurrent resumes; its WHERE is re-checked against the
    // newest row, so an older version never overwrites a newer one.
    const updated = await this.pool.query<PolicyState>(
      'UPDATE policy SET version = $1, paused = false, updated_at = $2 WHERE id = 0 AND version <= $1 RETURNING version, paused',
      [version, Date.now()],
    );
    if (updated.rows[0]) return { applied: true, state: { version: updated.rows[0].version, paused: updated.rows[0].paused } };
    return { applied: false, state: await this.loadPolicy() };
  }

  async createSession(s: { sessionId: string; key: string; episodeId: string; attempt: number; info: SessionInfo }): Promise<SessionRecord> {
    await this.pool.query(
      `INSERT INTO sessions (session_id, key, episode_id, attempt, info_json, created_at)
       VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
      [s.sessionId, s.key, s.episodeId, s.attempt, JSON.stringify(s.info), Date.now()],
    );
    const record = await this.getSession(s.sessionId);
    if (!record) throw new Error(`session ${s.sessionId} was not stored`);
    return record;
  }

  async getSession(sessionId: string): Promise<SessionRecord | undefined> {
    const { rows } = await this.pool.query<SessionRow>(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE session_id = $1`, [sessionId]);
    return rows[0] && toSession(rows[0]);
  }

  async getSessionByKey(key: string): Promise<SessionRecord | undefined> {
    const { rows } = await this.pool.query<SessionRow>(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE key = $1`, [key]);
    return rows[0] && toSession(rows[0]);
  }

  async closeSession(sessionId: string, terminationReason: string): Promise<void> {
    await this.pool.query(
      `UPDATE sessions SET status = 'closed', termination_reason = COALESCE(termination_reason, $1),
       closed_at = COALESCE(closed_at, $2) WHERE session_id = $3`,
      [terminationReason, Date.now(), sessionId],
    );
  }

  async claimSession(sessionId: string, owner: string, ttlMs: number, now = Date.now()): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE sessions SET owner = $2, owner_until = $3
       WHERE session_id = $1 AND (owner IS NULL OR owner = $2 OR owner_until <= $4)`,
      [sessionId, owner, now + ttlMs, now],
    );
    return rowCount === 1;
  }

  async renewSessions(owner: string, ttlMs: number, now = Date.now()): Promise<void> {
    await this.pool.query(`UPDATE sessions SET owner_until = $2 WHERE owner = $1 AND status = 'open'`, [owner, now + ttlMs]);
  }

  async commitTurn(turn: StoredTurn, options: { rolledBackSeq?: number; owner?: string } = {}): Promise<void> {
    const now = Date.now();
    const params: unknown[] = [
      turn.sessionId,
      turn.chainIndex,
      turn.seq,
      turn.turnIndex,
      packInt32(turn.promptDelta),
      packInt32(turn.sampled),
      packFloat32(turn.logprobs),
      packInt32(turn.sampledVersions),
      turn.finishReason,
      turn.cachedTokens,
      turn.version,
      turn.tLlmS,
      turn.messagesJson,
      turn.replyJson,
      turn.toolsJson,
      turn.rolledBack,
      now,
      options.rolledBackSeq ?? null,
      turn.temperature,
      turn.logprobsMode,
    ];
    const fenced = options.owner !== undefined;
    let inserted: number | null;
    try {
      ({ rowCount: inserted } = await this.pool.query(fenced ? { ...COMMIT_OWNED_TURN, values: [...params, options.owner, now] } : { ...COMMIT_TURN, values: params }));
    } catch (error) {
      if (error instanceof pg.DatabaseError && error.code === UNIQUE_VIOLATION) {
        throw new StoreConflictError(`turn ${turn.seq} of chain ${turn.chainIndex} of session ${turn.sessionId} is already committed`);
      }
      throw error;
    }
    if (inserted !== 1) throw new StoreConflictError(`session ${turn.sessionId} is not owned by ${options.owner}`);
  }

  async loadTurns(sessionId: string): Promise<StoredTurn[]> {
    const { rows } = await this.pool.query<TurnRow>(
      `SELECT session_id, chain_index, seq, turn_index, prompt_delta, sampled, logprobs, sampled_versions,
         finish_reason, cached_tokens, temperature, logprobs_mode, version, t_llm_s, messages_json, reply_json, tools_json,
         rolled_back
       FROM turns WHERE session_id = $1 ORDER BY chain_index, seq`,
      [sessionId],
    );
    return rows.map(toTurn);
  }

  async saveResponse(r: StoredResponse): Promise<void> {
    await this.pool.query(
      `INSERT INTO responses (session_id, response_id, input_json, output_json, created_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (session_id, response_id) DO UPDATE SET input_json = excluded.input_json,
         output_json = excluded.output_json, created_at = excluded.created_at`,
      [r.sessionId, r.responseId, r.inputJson, r.outputJson, Date.now()],
    );
  }

  async getResponse(sessionId: string, responseId: string): Promise<StoredResponse | undefined> {
    const { rows } = await this.pool.query<{ input_json: string; output_json: string }>(
      'SELECT input_json, output_json FROM responses WHERE session_id = $1 AND response_id = $2',
      [sessionId, responseId],
    );
    return rows[0] && { sessionId, responseId, inputJson: rows[0].input_json, outputJson: rows[0].output_json };
  }

  async saveChainReports(sessionId: string, reports: ChainReport[]): Promise<void> {
    await this.pool.query(
      `INSERT INTO chain_reports (session_id, chain_index, drift_offset, drift_turns)
       SELECT $1, * FROM unnest($2::int[], $3::int[], $4::int[])
       ON CONFLICT (session_id, chain_index) DO UPDATE SET drift_offset = excluded.drift_offset, drift_turns = excluded.drift_turns`,
      [sessionId, reports.map((r) => r.chainIndex), reports.map((r) => r.driftOffset), reports.map((r) => r.driftTurns)],
    );
  }

  async loadChainReports(sessionId: string): Promise<ChainReport[]> {
    const { rows } = await this.pool.query<{ chain_index: number; drift_offset: number; drift_turns: number }>(
      'SELECT chain_index, drift_offset, drift_turns FROM chain_reports WHERE session_id = $1 ORDER BY chain_index',
      [sessionId],
    );
    return rows.map((r) => ({ chainIndex: r.chain_index, driftOffset: r.drift_offset, driftTurns: r.drift_turns }));
  }

  async recordEpisode(e: EpisodeRecord): Promise<void> {
    await this.pool.query(
      `INSERT INTO episodes (episode_id, batch_id, task_id, group_id, episode_index, agent_name,
         session_id, outcome, termination_reason, reward, reward_info_json, num_turns,
         num_tool_calls, t_episode_s, t_env_s, finished_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
       ON CONFLICT (episode_id) DO UPDATE SET session_id = excluded.session_id,
         outcome = excluded.outcome, termination_reason = excluded.termination_reason,
         reward = excluded.reward, reward_info_json = excluded.reward_info_json,
         num_turns = excluded.num_turns, num_tool_calls = excluded.num_tool_calls,
         t_episode_s = excluded.t_episode_s, t_env_s = excluded.t_env_s,
         finished_at = excluded.finished_at`,
      [
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
      ],
    );
  }

  async listEpisodes(batchId: string): Promise<EpisodeRecord[]> {
    const { rows } = await this.pool.query<EpisodeRow>('SELECT * FROM episodes WHERE batch_id = $1 ORDER BY group_id, episode_index', [batchId]);
    return rows.map(toEpisode);
  }

  async listGroupEpisodes(batchId: string, groupId: string): Promise<EpisodeRecord[]> {
    const { rows } = await this.pool.query<EpisodeRow>(
      'SELECT * FROM episodes WHERE batch_id = $1 AND group_id = $2 ORDER BY episode_index, episode_id',
      [batchId, groupId],
    );
    return rows.map(toEpisode);
  }

  /**
   * Admission takes one advisory lock for the whole database before it counts: every admitting
   * process queues on it, so a count is never stale when its insert commits. Admissions are a
   * few per episode and short, so one lock costs little, where SERIALIZABLE would need a retry
   * loop around every call.
   */
  async tryAdmit(episodeId: string, candidates: AdmissionCandidate[], ttlMs: number, now = Date.now()): Promise<AdmissionLease | undefined> {
    return inTransaction(this.pool, async (client): Promise<AdmissionLease | undefined> => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [ADMISSION_LOCK]);
      const held = await client.query<{ instance: string; expires_at: number }>(
        'SELECT instance, expires_at FROM admission_leases WHERE episode_id = $1 AND expires_at > $2',
        [episodeId, now],
      );
      if (held.rows[0]) return { episodeId, instance: held.rows[0].instance, expiresAt: held.rows[0].expires_at };
      // Expired leases are not counted; deleting them only keeps the table small, so rows another
      // statement holds (a release, a renewal) are skipped rather than waited for.
      await client.query(
        'DELETE FROM admission_leases WHERE episode_id IN (SELECT episode_id FROM admission_leases WHERE expires_at <= $1 FOR UPDATE SKIP LOCKED)',
        [now],
      );
      const counts = await client.query<{ instance: string; n: number }>(
        'SELECT instance, count(*) AS n FROM admission_leases WHERE expires_at > $1 GROUP BY instance',
        [now],
      );
      const pick = pickCandidate(candidates, new Map(counts.rows.map((r) => [r.instance, r.n])));
      if (!pick) return undefined;
      const expiresAt = now + ttlMs;
      await client.query(
        `INSERT INTO admission_leases (episode_id, instance, expires_at) VALUES ($1, $2, $3)
         ON CONFLICT (episode_id) DO UPDATE SET instance = excluded.instance, expires_at = excluded.expires_at`,
        [episodeId, pick, expiresAt],
      );
      return { episodeId, instance: pick, expiresAt };
    });
  }

  async renewLease(episodeId: string, instance: string, ttlMs: number, now = Date.now()): Promise<void> {
    await this.pool.query(
      `INSERT INTO admission_leases (episode_id, instance, expires_at) VALUES ($1, $2, $3)
       ON CONFLICT (episode_id) DO UPDATE SET instance = excluded.instance, expires_at = excluded.expires_at`,
      [episodeId, instance, now + ttlMs],
    );
  }

  async releaseLease(episodeId: string): Promise<void> {
    await this.pool.query('DELETE FROM admission_leases WHERE episode_id = $1', [episodeId]);
  }

  async releaseLeasesWithPrefix(prefix: string): Promise<number> {
    const { rowCount } = await this.pool.query('DELETE FROM admission_leases WHERE starts_with(episode_id, $1)', [prefix]);
    return rowCount ?? 0;
  }

  async listLeases(now = Date.now()): Promise<AdmissionLease[]> {
    const { rows } = await this.pool.query<{ episode_id: string; instance: string; expires_at: number }>(
      'SELECT episode_id, instance, expires_at FROM admission_leases WHERE expires_at > $1 ORDER BY episode_id',
      [now],
    );
    return rows.map((r) => ({ episodeId: r.episode_id, instance: r.instance, expiresAt: r.expires_at }));
  }

  async capLeases(ttlMs: number, now = Date.now()): Promise<void> {
    await this.pool.query('UPDATE admission_leases SET expires_at = $1 WHERE expires_at > $1', [now + ttlMs]);
  }

  async ackGroups(batchId: string, groupIds: string[]): Promise<string[]> {
    // Two calls inserting overlapping groups in different orders would deadlock on each other's
    // uncommitted rows: the batch's lock runs them one after the other. WITH ORDINALITY ... ORDER
    // BY draws the identity `position` in the order given; a group acknowledged before (or twice
    // in one call) keeps its first position.
    return inTransaction(this.pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [ACK_LOCK_SPACE, batchId]);
      await client.query(
        `INSERT INTO batch_acks (batch_id, group_id)
         SELECT $1, g.id FROM unnest($2::text[]) WITH ORDINALITY AS g(id, n) ORDER BY g.n
         ON CONFLICT (batch_id, group_id) DO NOTHING`,
        [batchId, groupIds],
      );
      const { rows } = await client.query<{ group_id: string }>('SELECT group_id FROM batch_acks WHERE batch_id = $1 ORDER BY position', [batchId]);
      return rows.map((r) => r.group_id);
    });
  }

  async ackedGroups(batchId: string): Promise<string[]> {
    const { rows } = await this.pool.query<{ group_id: string }>('SELECT group_id FROM batch_acks WHERE batch_id = $1 ORDER BY position', [batchId]);
    return rows.map((r) => r.group_id);
  }

  async recordBatchResult(r: BatchResult): Promise<void> {
    await this.pool.query(
      `INSERT INTO batch_results (batch_id, group_id, sample, episode_id, reward, failure) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (batch_id, group_id, sample) DO UPDATE SET episode_id = excluded.episode_id, reward = excluded.reward, failure = excluded.failure`,
      [r.batchId, r.groupId, r.sample, r.episodeId, r.reward, r.failure],
    );
  }

  async listBatchResults(batchId: string, groupIds: string[]): Promise<BatchResult[]> {
    const { rows } = await this.pool.query<BatchResultRow>(
      'SELECT * FROM batch_results WHERE batch_id = $1 AND group_id = ANY($2::text[]) ORDER BY group_id, sample',
      [batchId, groupIds],
    );
    return rows.map(toBatchResult);
  }

  async finishBatchGroup(g: BatchGroupRecord): Promise<void> {
    await this.pool.query(
      `INSERT INTO batch_groups (batch_id, group_id, task_id, seq, n_requested, status, file_json, missing_json) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (batch_id, group_id) DO UPDATE SET task_id = excluded.task_id, seq = excluded.seq, n_requested = excluded.n_requested,
         status = excluded.status, file_json = excluded.file_json, missing_json = excluded.missing_json`,
      [g.batchId, g.groupId, g.taskId, g.seq, g.nRequested, g.status, g.fileJson, JSON.stringify(g.missingEpisodeIds)],
    );
  }

  async listBatchGroups(batchId: string, fromSeq: number, limit: number): Promise<BatchGroupRecord[]> {
    const { rows } = await this.pool.query<BatchGroupRow>('SELECT * FROM batch_groups WHERE batch_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3', [batchId, fromSeq, limit]);
    return rows.map(toBatchGroup);
  }

  async saveReport(report: StoredReport): Promise<void> {
    await this.pool.query(
      `INSERT INTO reports (report_id, batch_id, created_at, json) VALUES ($1, $2, $3, $4)
       ON CONFLICT (report_id) DO UPDATE SET batch_id = excluded.batch_id, created_at = excluded.created_at, json = excluded.json`,
      [report.reportId, report.batchId, report.createdAt, report.json],
    );
  }

  async listReports(batchId: string): Promise<StoredReport[]> {
    const { rows } = await this.pool.query<ReportRow>('SELECT * FROM reports WHERE batch_id = $1 ORDER BY created_at, report_id', [batchId]);
    return rows.map(toReport);
  }

  async getReport(reportId: string): Promise<StoredReport | undefined> {
    const { rows } = await this.pool.query<ReportRow>('SELECT * FROM reports WHERE report_id = $1', [reportId]);
    return rows[0] && toReport(rows[0]);
  }

  async register(r: Registration): Promise<void> {
    await this.pool.query(
      `INSERT INTO registrations (kind, id, address, last_seen_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (kind, id) DO UPDATE SET address = excluded.address, last_seen_at = excluded.last_seen_at`,
      [r.kind, r.id, r.address, r.lastSeenAt],
    );
  }

  async listRegistrations(kind: Registration['kind'], maxAgeMs: number, now = Date.now()): Promise<Registration[]> {
    const { rows } = await this.pool.query<RegistrationRow>(
      'SELECT * FROM registrations WHERE kind = $1 AND last_seen_at > $2 ORDER BY id',
      [kind, now - maxAgeMs],
    );
    return rows.map(toRegistration);
  }

  async forgetRegistrations(kind: Registration['kind'], maxAgeMs: number, now = Date.now()): Promise<Registration[]> {
    const { rows } = await this.pool.query<RegistrationRow>(
      'WITH gone AS (DELETE FROM registrations WHERE kind = $1 AND last_seen_at <= $2 RETURNING *) SELECT * FROM gone ORDER BY id',
      [kind, now - maxAgeMs],
    );
    return rows.map(toRegistration);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
