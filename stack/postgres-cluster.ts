import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, openSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stopChild } from './child-process.js';

export interface PostgresClusterOptions {
  /** Directory of the cluster (created by initdb when empty); the server log goes beside it. */
  dataDir: string;
  /** TCP port on 127.0.0.1. */
  port: number;
  /** How long to wait for the server to accept connections. Default 60 s. */
  startTimeoutMs?: number;
}

export interface PostgresCluster {
  /** `postgres://postgres@127.0.0.1:<port>/postgres`: a superuser URL (trust auth on loopback only). */
  url: string;
  port: number;
  /** A URL of another database of the same cluster. */
  urlOf(database: string): string;
  /** Creates a database when it does not exist yet. */
  createDatabase(name: string): void;
  stop(): Promise<void>;
}

export class PostgresClusterError extends Error {
  override name = 'PostgresClusterError';
}

/** The PostgreSQL binaries: `PG_BIN` when set, else the newest Debian cluster version installed. */
export function postgresBinDir(): string {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(path.join(root, v, 'bin', 'postgres'))) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (!newest) throw new PostgresClusterError('PostgreSQL is not installed (run scripts/setup.sh, or set PG_BIN)');
  return path.join(root, newest, 'bin');
}

/** PostgreSQL refuses to run as root: as root, its programs run as the `postgres` user. */
function asServerUser(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

/**
 * Starts a private PostgreSQL cluster for this machine's tests or a one-machine stack: initdb on
 * first use, listening on 127.0.0.1 only, its socket inside the data directory, trust auth on
 * loopback. Resolves once it accepts connections.
 */
export async function startPostgresCluster(options: PostgresClusterOptions): Promise<PostgresCluster> {
  const bin = postgresBinDir();
  const user = asServerUser();
  const pgData = path.join(options.dataDir, 'pgdata');
  mkdirSync(options.dataDir, { recursive: true });
  if (user.uid !== undefined) chownSync(options.dataDir, user.uid, user.gid!);
  if (!existsSync(path.join(pgData, 'PG_VERSION'))) {
    execFileSync(path.join(bin, 'initdb'), ['-D', pgData, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-instructions'], {
      ...user,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
  }
  const logFile = path.join(options.dataDir, 'postgres.log');
  const log = openSync(logFile, 'a');
  if (user.uid !== undefined && statSync(logFile).uid !== user.uid) chownSync(logFile, user.uid, user.gid!);
  const child: ChildProcess = spawn(
    path.join(bin, 'postgres'),
    [
      '-D', pgData,
      '-c', `port=${options.port}`,
      '-c', 'listen_addresses=127.0.0.1',
      '-c', `unix_socket_directories=${options.dataDir}`,
      '-c', 'max_connections=300',
      // Test and one-machine clusters trade durability on power loss for commit latency.
      '-c', 'fsync=off',
      '-c', 'synchronous_commit=off',
      '-c', 'full_page_writes=off',
    ],
    { ...user, stdio: ['ignore', log, log], detached: true },
  );
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = `exited with ${code ?? signal}`));
  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  const isReady = path.join(bin, 'pg_isready');
  for (;;) {
    if (exited) throw new PostgresClusterError(`PostgreSQL ${exited}; see ${logFile}`);
    try {
      execFileSync(isReady, ['-h', '127.0.0.1', '-p', String(options.port), '-U', 'postgres'], { stdio: 'ignore' });
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new PostgresClusterError(`PostgreSQL did not accept connections on port ${options.port}; see ${logFile}`);
      }
      await sleep(200);
    }
  }
  const urlOf = (database: string) => `postgres://postgres@127.0.0.1:${options.port}/${database}`;
  const psql = path.join(bin, 'psql');
  return {
    url: urlOf('postgres'),
    port: options.port,
    urlOf,
    createDatabase(name: string) {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new PostgresClusterError(`not a plain database name: ${name}`);
      const exists = execFileSync(psql, [urlOf('postgres'), '-tAc', `SELECT 1 FROM pg_database WHERE datname = '${name}'`], { encoding: 'utf8' }).trim();
      if (exists !== '1') execFileSync(psql, [urlOf('postgres'), '-qc', `CREATE DATABASE ${name}`], { stdio: 'ignore' });
    },
    async stop() {
      if (exited) return;
      // SIGINT: fast shutdown (active connections are ended).
      await stopChild(child, 'SIGINT', 10_000);
    },
  };
}

/** Removes a cluster's data directory (after `stop`). */
export function removePostgresCluster(dataDir: string): void {
  rmSync(dataDir, { recursive: true, force: true });
}
