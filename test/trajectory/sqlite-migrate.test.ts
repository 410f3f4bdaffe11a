import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../trajectory/store/sqlite.js';
import { SQLITE_MIGRATIONS } from '../../trajectory/store/sqlite-migrations.js';
import { PROJECT_ROOT } from '../../stack/temporal-binary.js';

const VERSIONS = SQLITE_MIGRATIONS.map((m) => m.version);
const CHILD = path.join(PROJECT_ROOT, 'test', 'helpers', 'sqlite-open-child.ts');

interface Child {
  opening: Promise<void>;
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

function openInChild(file: string): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, file], { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let signal: () => void = () => {};
  const opening = new Promise<void>((resolve) => (signal = resolve));
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
    if (stdout.includes('opening\n')) signal();
  });
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('exit', (code) => {
      signal();
      resolve({ code, stdout, stderr });
    }),
  );
  return { opening, done };
}

/** The child opened the store without an error and saw every migration applied. */
function expectOpened(result: Awaited<Child['done']>): void {
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  expect(result.stdout.trim().split('\n').at(-1)).toBe(JSON.stringify(VERSIONS));
}

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('SqliteStore migrations', () => {
  it('are applied once when several processes open a new store file at once', async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rollout-migrate-'));
    const file = path.join(dir, 'store.sqlite');
    // Hold the write lock so every process reaches its migration step before any can apply one:
    // each then waits on the lock, and the race is the same on every run.
    const holder = new Database(file);
    holder.pragma('journal_mode = WAL');
    holder.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
    holder.exec('BEGIN IMMEDIATE');
    const children = Array.from({ length: 4 }, () => openInChild(file));
    await Promise.all(children.map((c) => c.opening));
    await sleep(1000);
    holder.exec('COMMIT');
    holder.close();
    const results = await Promise.all(children.map((c) => c.done));
    for (const r of results) expectOpened(r);
    const store = SqliteStore.open(file);
    expect(await store.migrations()).toEqual(VERSIONS);
    await store.close();
  }, 60_000);

  it("switch a new file to WAL once another connection's write lock is gone", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rollout-migrate-'));
    const file = path.join(dir, 'store.sqlite');
    // A connection writing in the file's first (rollback) journal mode: SQLite fails the WAL
    // switch at once, without its busy timeout (two gateway processes opening a new store in CI).
    const holder = new Database(file);
    holder.exec('CREATE TABLE first_writer (x INTEGER)');
    holder.exec('BEGIN IMMEDIATE');
    const child = openInChild(file);
    await child.opening;
    await sleep(500);
    holder.exec('COMMIT');
    holder.close();
    expectOpened(await child.done);
    const check = new Database(file);
    expect(check.pragma('journal_mode', { simple: true })).toBe('wal');
    check.close();
  }, 60_000);
});
