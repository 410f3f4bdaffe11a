/**
 * Versioned migrations of the SQLite store, applied in order on open (each in its own
 * transaction, recorded in `schema_migrations`). Never edit a released migration: add one.
 * Token arrays are BLOBs (see ../codec.ts).
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const SQLITE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'sessions, turns, episodes, responses, chain reports, policy',
    // IF NOT EXISTS: stores made before migrations were versioned already hold these tables.
    sql: `
CREATE TABLE IF NOT EXISTS sessions (
  session_id TEXT PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,
  episode_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  info_json TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'open',
  termination_reason TEXT,
  created_at INTEGER NOT NULL,
  closed_at INTEGER
);
CREATE TABLE IF NOT EXISTS turns (
  session_id TEXT NOT NULL,
  chain_index INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  turn_index INTEGER NOT NULL,
  prompt_delta BLOB NOT NULL,
  sampled BLOB NOT NULL,
  logprobs BLOB NOT NULL,
  finish_reason TEXT NOT NULL,
  cached_tokens INTEGER NOT NULL,
  version INTEGER NOT NULL,
  t_llm_s REAL NOT NULL,
  messages_json TEXT NOT NULL,
  reply_json TEXT NOT NULL,
  tools_json TEXT,
  rolled_back INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  sampled_versions BLOB,
  PRIMARY KEY (session_id, chain_index, seq)
);
CREATE TABLE IF NOT EXISTS episodes (
  episode_id TEXT PRIMARY KEY,
  batch_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  group_id TEXT NOT NULL,
  episode_index INTEGER NOT NULL,
  agent_name TEXT NOT NULL,
  session_id TEXT,
  outcome TEXT NOT NULL,
  termination_reason TEXT NOT NULL,
  reward REAL,
  reward_info_json TEXT NOT NULL,
  num_turns INTEGER NOT NULL,
  num_tool_calls INTEGER NOT NULL,
  t_episode_s REAL NOT NULL,
  t_env_s REAL NOT NULL,
  finished_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS responses (
  session_id TEXT NOT NULL,
  response_id TEXT NOT NULL,
  input_json TEXT NOT NULL,
  output_json TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (session_id, response_id)
);
CREATE TABLE IF NOT EXISTS chain_reports (
  session_id TEXT NOT NULL,
  chain_index INTEGER NOT NULL,
  drift_offset INTEGER NOT NULL,
  drift_turns INTEGER NOT NULL,
  PRIMARY KEY (session_id, chain_index)
);
CREATE TABLE IF NOT EXISTS policy (
  id INTEGER PRIMARY KEY CHECK (id = 0),
  version INTEGER NOT NULL,
  paused INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS episodes_by_batch ON episodes(batch_id, group_id, episode_index);
`,
  },
  {
    version: 2,
    name: 'session owners, admission leases, acknowledgements, reports, registrations',
    sql: `
ALTER TABLE sessions ADD COLUMN owner TEXT;
ALTER TABLE sessions ADD COLUMN owner_until INTEGER;
CREATE TABLE admission_leases (
  episode_id TEXT PRIMARY KEY,
  instance TEXT NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX admission_leases_by_instance ON admission_leases(instance, expires_at);
CREATE TABLE batch_acks (
  batch_id TEXT NOT NULL,
  group_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  PRIMARY KEY (batch_id, group_id)
);
CREATE TABLE reports (
  report_id TEXT PRIMARY KEY,
  batch_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  json TEXT NOT NULL
);
CREATE INDEX reports_by_batch ON reports(batch_id, created_at);
CREATE TABLE registrations (
  kind TEXT NOT NULL,
  id TEXT NOT NULL,
  address TEXT NOT NULL,
  last_seen_at INTEGER NOT NULL,
  PRIMARY KEY (kind, id)
);
`,
  },
  {
    version: 3,
    name: 'batch results and finished groups',
    // Per-episode endings and finished groups live here, not in the batch workflow's state.
    sql: `
CREATE TABLE batch_results (
  batch_id TEXT NOT NULL,
  group_id TEXT NOT NULL,
  sample INTEGER NOT NULL,
  episode_id TEXT NOT NULL,
  reward REAL,
  failure TEXT,
  PRIMARY KEY (batch_id, group_id, sample)
);
CREATE TABLE batch_groups (
  batch_id TEXT NOT NULL,
  group_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  n_requested INTEGER NOT NULL,
  status TEXT NOT NULL,
  file_json TEXT,
  missing_json TEXT NOT NULL,
  PRIMARY KEY (batch_id, group_id)
);
CREATE UNIQUE INDEX batch_groups_in_order ON batch_groups(batch_id, seq);
`,
  },
  {
    version: 4,
    name: 'temperature and log-prob mode of each turn',
    // NULL in turns recorded before: what they were sampled at is unknown.
    sql: `
ALTER TABLE turns ADD COLUMN temperature REAL;
ALTER TABLE turns ADD COLUMN logprobs_mode TEXT;
`,
  },
];

/**
 * Columns added to version 1 before migrations were versioned: a store made then has the table
 * without them, and `CREATE TABLE IF NOT EXISTS` leaves it so.
 */
export const LEGACY_ADDED_COLUMNS: { table: string; column: string; definition: string }[] = [
  /** Policy version of each sampled token (int32 blob); NULL in older rows: all took `version`. */
  { table: 'turns', column: 'sampled_versions', definition: 'BLOB' },
];
