/**
 * Versioned migrations of the PostgreSQL store, applied in order on open, all pending ones in one
 * transaction, recorded in `schema_migrations`. Never edit a released migration: add one.
 * Token arrays are BYTEA packed as in ../codec.ts; times are BIGINT milliseconds since the epoch.
 */
export interface PostgresMigration {
  version: number;
  name: string;
  sql: string;
}

export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [
  {
    version: 1,
    name: 'sessions, turns, episodes, responses, chain reports, policy, leases, acks, reports, registrations',
    // COLLATE "C" on ids that lists are ordered by: byte order, as SQLite sorts, whatever the
    // cluster's locale.
    sql: `
CREATE TABLE sessions (
  session_id TEXT PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,
  episode_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  info_json TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'open',
  termination_reason TEXT,
  created_at BIGINT NOT NULL,
  closed_at BIGINT,
  owner TEXT,
  owner_until BIGINT
);
CREATE INDEX sessions_open_by_owner ON sessions (owner) WHERE status = 'open';

CREATE TABLE turns (
  session_id TEXT NOT NULL,
  chain_index INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  turn_index INTEGER NOT NULL,
  prompt_delta BYTEA NOT NULL,
  sampled BYTEA NOT NULL,
  logprobs BYTEA NOT NULL,
  sampled_versions BYTEA NOT NULL,
  finish_reason TEXT NOT NULL,
  cached_tokens INTEGER NOT NULL,
  version INTEGER NOT NULL,
  t_llm_s DOUBLE PRECISION NOT NULL,
  messages_json TEXT NOT NULL,
  reply_json TEXT NOT NULL,
  tools_json TEXT,
  rolled_back BOOLEAN NOT NULL DEFAULT false,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (session_id, chain_index, seq)
);

CREATE TABLE responses (
  session_id TEXT NOT NULL,
  response_id TEXT NOT NULL,
  input_json TEXT NOT NULL,
  output_json TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (session_id, response_id)
);

CREATE TABLE chain_reports (
  session_id TEXT NOT NULL,
  chain_index INTEGER NOT NULL,
  drift_offset INTEGER NOT NULL,
  drift_turns INTEGER NOT NULL,
  PRIMARY KEY (session_id, chain_index)
);

CREATE TABLE episodes (
  episode_id TEXT COLLATE "C" PRIMARY KEY,
  batch_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  group_id TEXT COLLATE "C" NOT NULL,
  episode_index INTEGER NOT NULL,
  agent_name TEXT NOT NULL,
  session_id TEXT,
  outcome TEXT NOT NULL,
  termination_reason TEXT NOT NULL,
  reward DOUBLE PRECISION,
  reward_info_json TEXT NOT NULL,
  num_turns INTEGER NOT NULL,
  num_tool_calls INTEGER NOT NULL,
  t_episode_s DOUBLE PRECISION NOT NULL,
  t_env_s DOUBLE PRECISION NOT NULL,
  finished_at BIGINT NOT NULL
);
CREATE INDEX episodes_by_batch ON episodes (batch_id, group_id, episode_index);

-- One row, present from the start, so pause and resume are single-row updates.
CREATE TABLE policy (
  id INTEGER PRIMARY KEY CHECK (id = 0),
  version INTEGER NOT NULL,
  paused BOOLEAN NOT NULL,
  updated_at BIGINT NOT NULL
);
INSERT INTO policy (id, version, paused, updated_at) VALUES (0, 0, false, 0);

CREATE TABLE admission_leases (
  episode_id TEXT COLLATE "C" PRIMARY KEY,
  instance TEXT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX admission_leases_by_expiry ON admission_leases (expires_at);

-- position: a global sequence, so a batch's acknowledgement order is the order of its rows.
CREATE TABLE batch_acks (
  batch_id TEXT NOT NULL,
  group_id TEXT NOT NULL,
  position BIGINT GENERATED ALWAYS AS IDENTITY,
  PRIMARY KEY (batch_id, group_id)
);
CREATE INDEX batch_acks_in_order ON batch_acks (batch_id, position);

CREATE TABLE reports (
  report_id TEXT COLLATE "C" PRIMARY KEY,
  batch_id TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  json TEXT NOT NULL
);
CREATE INDEX reports_by_batch ON reports (batch_id, created_at);

CREATE TABLE registrations (
  kind TEXT NOT NULL,
  id TEXT COLLATE "C" NOT NULL,
  address TEXT NOT NULL,
  last_seen_at BIGINT NOT NULL,
  PRIMARY KEY (kind, id)
);
`,
  },
  {
    version: 2,
    name: 'batch results and finished groups',
    // Per-episode endings and finished groups live here, not in the batch workflow's state.
    sql: `
CREATE TABLE batch_results (
  batch_id TEXT COLLATE "C" NOT NULL,
  group_id TEXT COLLATE "C" NOT NULL,
  sample INTEGER NOT NULL,
  episode_id TEXT NOT NULL,
  reward DOUBLE PRECISION,
  failure TEXT,
  PRIMARY KEY (batch_id, group_id, sample)
);
CREATE TABLE batch_groups (
  batch_id TEXT COLLATE "C" NOT NULL,
  group_id TEXT COLLATE "C" NOT NULL,
  task_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  n_requested INTEGER NOT NULL,
  status TEXT NOT NULL,
  file_json TEXT,
  missing_json TEXT NOT NULL,
  PRIMARY KEY (batch_id, group_id)
);
CREATE UNIQUE INDEX batch_groups_in_order ON batch_groups (batch_id, seq);
`,
  },
  {
    version: 3,
    name: 'temperature and log-prob mode of each turn',
    // NULL in turns recorded before: what they were sampled at is unknown.
    sql: `
ALTER TABLE turns ADD COLUMN temperature DOUBLE PRECISION;
ALTER TABLE turns ADD COLUMN logprobs_mode TEXT;
`,
  },
];
