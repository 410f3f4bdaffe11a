/**
 * Store benchmark: committed turns per second, and bytes written per turn, for SQLite and
 * PostgreSQL in the same run.
 *
 *   npm run bench:store
 *
 * SESSIONS sessions commit TURNS turns each, all sessions at once, one round (one turn of every
 * session) after the other, so chains grow to TURNS × (PROMPT + SAMPLED) tokens. Each turn adds
 * PROMPT prompt tokens and SAMPLED sampled ones (with log-probs and versions) and messages JSON
 * the size of that text, and is committed fenced by its gateway's ownership, as the gateway does.
 * Per round the bench measures what was written: PostgreSQL's WAL (`pg_current_wal_lsn()` before
 * and after) and the growth of the turns table with its TOAST and indexes; SQLite's WAL (auto-
 * checkpoint off, truncated between rounds) and the growth of the database file. Early and late
 * rounds side by side show that a turn costs its new tokens, not its context.
 *
 * PostgreSQL is a private cluster this run starts (fsync off, as for tests) and stops in
 * `finally`. Environment: BENCH_SESSIONS (default 256), BENCH_TURNS (16), BENCH_PROMPT (1536),
 * BENCH_SAMPLED (512), BENCH_POOL (PostgreSQL pool size, default 10).
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { removePostgresCluster, startPostgresCluster } from '../stack/postgres-cluster.js';
import { freePort } from '../stack/ports.js';
import { PostgresStore } from '../trajectory/store/postgres.js';
import { SqliteStore } from '../trajectory/store/sqlite.js';
import type { SessionInfo, Store, StoredTurn } from '../trajectory/store/types.js';
import { SAMPLING_DEFAULTS } from '../gateway/sampling-schema.js';
import { syntheticTokens } from './synthetic-tokens.js';

const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const SESSIONS = env('BENCH_SESSIONS', 256);
const TURNS = env('BENCH_TURNS', 16);
const PROMPT = env('BENCH_PROMPT', 1536);
const SAMPLED = env('BENCH_SAMPLED', 512);
const POOL = env('BENCH_POOL', 10);
const OWNER = 'bench-gateway';

const INFO: SessionInfo = {
  batchId: 'bench',
  taskId: 'task',
  groupId: 'group',
  episodeIndex: 0,
  agentName: 'builtin',
  homeInstance: 'sim-0',
  budgets: { maxTurns: TURNS, maxContextTokens: TURNS * (PROMPT + SAMPLED), maxWallTimeMs: 3_600_000 },
  sampling: { ...SAMPLING_DEFAULTS, maxTokens: SAMPLED },
};

/** About four characters of text per token, as the messages JSON of real turns. */
function text(seed: number, tokenCount: number): string {
  return JSON.stringify(syntheticTokens(seed, tokenCount).map((t) => t.toString(36)).join(' '));
}

function makeTurn(session: number, seq: number): StoredTurn {
  const seed = session * 1_000 + seq;
  const sampled = syntheticTokens(seed + 500_000, SAMPLED);
  return {
    sessionId: `s${session}`,
    chainIndex: 0,
    seq,
    turnIndex: seq,
    promptDelta: syntheticTokens(seed, PROMPT),
    sampled,
    logprobs: sampled.map((t) => -(t % 1000) / 100),
    finishReason: 'tool_calls',
    cachedTokens: seq * (PROMPT + SAMPLED),
    temperature: 1,
    logprobsMode: 'raw',
    version: 1,
    sampledVersions: sampled.map(() => 1),
    tLlmS: 0.5,
    messagesJson: `[{"role":"tool","content":${text(seed, PROMPT)}}]`,
    replyJson: `{"role":"assistant","content":${text(seed + 500_000, SAMPLED)}}`,
    toolsJson: null,
    rolledBack: false,
  };
}

/** What a backend wrote since the last `mark`: WAL bytes and bytes of stored data. */
interface Meter {
  mark(): Promise<void>;
  read(): Promise<{ wal: number; stored: number }>;
}

async function postgresMeter(url: string): Promise<Meter & { close(): Promise<void> }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const sample = async () => {
    const { rows } = await client.query<{ lsn: string; size: string }>("SELECT pg_current_wal_lsn() AS lsn, pg_total_relation_size('turns') AS size");
    return rows[0]!;
  };
  let start = await sample();
  return {
    async mark() {
      start = await sample();
    },
    async read() {
      const now = await sample();
      const { rows } = await client.query<{ wal: string }>('SELECT pg_wal_lsn_diff($1, $2) AS wal', [now.lsn, start.lsn]);
      return { wal: Number(rows[0]!.wal), stored: Number(now.size) - Number(start.size) };
    },
    close: () => client.end(),
  };
}

function sqliteMeter(store: SqliteStore, file: string): Meter {
  // No automatic checkpoints: the WAL then holds exactly what a round wrote, and the file grows
  // only when `mark` checkpoints it.
  store.db.pragma('wal_autocheckpoint = 0');
  const size = async (f: string) => (await stat(f).catch(() => ({ size: 0 }))).size;
  let fileStart = 0;
  return {
    async mark() {
      store.db.pragma('wal_checkpoint(TRUNCATE)');
      fileStart = await size(file);
    },
    async read() {
      const wal = await size(`${file}-wal`);
      store.db.pragma('wal_checkpoint(TRUNCATE)');
      return { wal, stored: (await size(file)) - fileStart };
    },
  };
}

interface Result {
  backend: string;
  turns: number;
  errors: number;
  seconds: number;
  /** Per round: WAL and stored bytes per committed turn. */
  rounds: { wal: number; stored: number }[];
}

async function run(backend: string, store: Store, meter: Meter): Promise<Result> {
  await Promise.all(
    Array.from({ length: SESSIONS }, async (_, s) => {
      await store.createSession({ sessionId: `s${s}`, key: `k${s}`, episodeId: `e${s}`, attempt: 0, info: INFO });
      await store.claimSession(`s${s}`, OWNER, 3_600_000);
    }),
  );
  const turnsOf = Array.from({ length: TURNS }, (_, seq) => Array.from({ length: SESSIONS }, (_, s) => makeTurn(s, seq)));
  const rounds: Result['rounds'] = [];
  let committed = 0;
  let errors = 0;
  let seconds = 0;
  for (const turns of turnsOf) {
    await meter.mark();
    const start = performance.now();
    const results = await Promise.allSettled(turns.map((t) => store.commitTurn(t, { owner: OWNER })));
    seconds += (performance.now() - start) / 1000;
    const ok = results.filter((r) => r.status === 'fulfilled').length;
    for (const r of results) if (r.status === 'rejected') console.error(`${backend}: ${String(r.reason)}`);
    committed += ok;
    errors += results.length - ok;
    const written = await meter.read();
    rounds.push({ wal: written.wal / Math.max(ok, 1), stored: written.stored / Math.max(ok, 1) });
  }
  return { backend, turns: committed, errors, seconds, rounds };
}

function report(results: Result[]): void {
  const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
  const span = Math.max(1, Math.floor(TURNS / 4));
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const early = (r: Result, key: 'wal' | 'stored') => mean(r.rounds.slice(0, span).map((x) => x[key]));
  const late = (r: Result, key: 'wal' | 'stored') => mean(r.rounds.slice(-span).map((x) => x[key]));
  const newBytes = (PROMPT + SAMPLED) * 4 + SAMPLED * 8;
  console.log(
    `\n${SESSIONS} sessions × ${TURNS} turns, ${PROMPT} + ${SAMPLED} new tokens a turn (chains grow to ${TURNS * (PROMPT + SAMPLED)} tokens); ` +
      `token arrays ${kib(newBytes)} a turn, messages JSON about as much again; PostgreSQL pool ${POOL}`,
  );
  const header = ['backend', 'turns', 'errors', 'turns/s', `WAL/turn, turns 1-${span}`, `turns ${TURNS - span + 1}-${TURNS}`, `stored/turn, turns 1-${span}`, `turns ${TURNS - span + 1}-${TURNS}`];
  const rows = results.map((r) => [
    r.backend,
    String(r.turns),
    String(r.errors),
    (r.turns / r.seconds).toFixed(0),
    kib(early(r, 'wal')),
    kib(late(r, 'wal')),
    kib(early(r, 'stored')),
    kib(late(r, 'stored')),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(line(header));
  for (const row of rows) console.log(line(row));
  for (const r of results) {
    console.log(`\n${r.backend} per round (context at the round's start → WAL/turn, stored/turn):`);
    console.log(r.rounds.map((x, i) => `  ${String(i * (PROMPT + SAMPLED)).padStart(6)} tok → ${kib(x.wal).padStart(10)} ${kib(x.stored).padStart(10)}`).join('\n'));
  }
}

async function main(): Promise<void> {
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'rollout-bench-store-'));
  // Its own folder: as root, the cluster runs as `postgres`, which must reach it.
  const clusterDir = await mkdtemp(path.join(os.tmpdir(), 'rollout-bench-postgres-'));
  let cluster: Awaited<ReturnType<typeof startPostgresCluster>> | undefined;
  const results: Result[] = [];
  try {
    const file = path.join(scratch, 'store.sqlite');
    const sqlite = SqliteStore.open(file);
    try {
      results.push(await run('sqlite', sqlite, sqliteMeter(sqlite, file)));
    } finally {
      await sqlite.close();
    }

    cluster = await startPostgresCluster({ dataDir: clusterDir, port: await freePort() });
    cluster.createDatabase('bench');
    const url = cluster.urlOf('bench');
    const postgres = await PostgresStore.open(url, { poolSize: POOL });
    const meter = await postgresMeter(url);
    try {
      results.push(await run('postgres', postgres, meter));
    } finally {
      await meter.close();
      await postgres.close();
    }
    report(results);
    // A benchmark never hides a failure.
    if (results.some((r) => r.errors > 0)) process.exitCode = 1;
  } finally {
    await cluster?.stop();
    removePostgresCluster(clusterDir);
    await rm(scratch, { recursive: true, force: true });
  }
}

await main();
