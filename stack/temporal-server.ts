import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { SEARCH_ATTRIBUTES } from '../workflows/search-attributes.js';
import type { PostgresCluster } from './postgres-cluster.js';
import { freePort, freePortIn } from './ports.js';
import { findTemporalServerTools, type TemporalServerTools } from './temporal-binary.js';
import { killStale, stopChild } from './child-process.js';

export interface TemporalServerOptions {
  /** Directory for the server's configuration, log and pid file (the state lives in PostgreSQL). */
  dataDir: string;
  /** The PostgreSQL cluster that holds the `temporal` and `temporal_visibility` databases; both are created and their schemas set up or upgraded when needed. */
  postgres: Pick<PostgresCluster, 'url' | 'createDatabase'>;
  /** Front-end gRPC port on 127.0.0.1. The history, matching and worker services and their membership take other free ports. */
  port: number;
  /** How long to wait for the front end to answer and for namespace `default` with our search attributes to be usable. Default 120 s. */
  startTimeoutMs?: number;
}

export interface TemporalServer {
  /** Front end `host:port`. */
  address: string;
  stop(): Promise<void>;
}

export class TemporalServerError extends Error {
  override name = 'TemporalServerError';
}

const NAMESPACE = 'default';
const DATABASES = { default: 'temporal', visibility: 'temporal_visibility' } as const;
/** Fixed for the life of the databases: a server started with another count refuses them. */
const HISTORY_SHARDS = 4;
/** The dev server keeps a closed workflow for a day; so does this one. */
const RETENTION = '1 day';
/** `temporal.api.enums.v1.IndexedValueType` by the names of SEARCH_ATTRIBUTES. */
const INDEXED_VALUE_TYPES = { Keyword: 2, Int: 3, Double: 4 } as const;
const ENVIRONMENT = 'rollout';

/**
 * Dynamic configuration. Update, Schedules and Nexus are on by default in v1.29.1, so nothing
 * enables them; what is set mirrors the CLI dev server, so that both behave alike for tests and
 * compare like with like in the benchmark.
 */
const DYNAMIC_CONFIG = {
  // Search attributes added at start are usable at once, not after the cache's refresh.
  'system.forceSearchAttributesCacheRefreshOnRead': true,
  // That refresh reads the database on every use: the dev server's persistence limits leave room for it.
  'frontend.persistenceMaxQPS': 10_000,
  'history.persistenceMaxQPS': 45_000,
  // Listing episodes by search attribute (tests, the UI) is throttled at 10/s per namespace by default.
  'frontend.namespaceRPS.visibility': 100,
};

/**
 * Starts a Temporal server (frontend, history, matching, worker in one process) on PostgreSQL:
 * creates the databases and sets up or upgrades their schemas with the SQL tool, writes the server
 * configuration under `dataDir`, starts the server and resolves once namespace `default` exists
 * with our search attributes. A second start on the same databases keeps their history.
 */
export async function startTemporalServer(options: TemporalServerOptions): Promise<TemporalServer> {
  const tools = findTemporalServerTools();
  if (!tools) throw new TemporalServerError('the Temporal server is not built: run `bash scripts/install-temporal-server.sh` (or scripts/setup.sh)');
  mkdirSync(options.dataDir, { recursive: true });
  const logFile = path.join(options.dataDir, 'temporal-server.log');
  const pg = new URL(options.postgres.url);
  const database = { host: pg.hostname, port: Number(pg.port || 5432), user: decodeURIComponent(pg.username), password: decodeURIComponent(pg.password) };
  for (const [store, name] of Object.entries(DATABASES)) {
    options.postgres.createDatabase(name);
    const schema = path.join(tools.postgresSchemaDir, 'v12', store === 'default' ? 'temporal' : 'visibility', 'versioned');
    const connect = ['--plugin', 'postgres12', '--ep', database.host, '-p', String(database.port), '-u', database.user, ...(database.password ? ['--pw', database.password] : []), '--db', name];
    // Version 0.0 creates only the versioning tables (a no-op when they exist); the update applies every versioned step not applied yet.
    await runTool(tools, [...connect, 'setup-schema', '-v', '0.0'], logFile);
    await runTool(tools, [...connect, 'update-schema', '-d', schema], logFile);
  }

  const configDir = path.join(options.dataDir, 'config');
  mkdirSync(configDir, { recursive: true });
  const dynamicConfigFile = path.join(configDir, 'dynamic.yaml');
  writeFileSync(dynamicConfigFile, stringify(Object.fromEntries(Object.entries(DYNAMIC_CONFIG).map(([key, value]) => [key, [{ value }]]))));
  writeFileSync(path.join(configDir, `${ENVIRONMENT}.yaml`), stringify(await serverConfig(options.port, database, dynamicConfigFile)));

  const pidFile = path.join(options.dataDir, 'server.pid');
  killStale(pidFile, options.dataDir);
  // Its own process group, as the dev server: Ctrl-C reaches only us, and we stop the server after
  // the worker and the batch are done with it. The pid file lets the next start clean up after a crash.
  const log = openSync(logFile, 'a');
  const child: ChildProcess = spawn(tools.server, ['--root', options.dataDir, '--config', 'config', '--env', ENVIRONMENT, '--allow-no-auth', 'start'], {
    stdio: ['ignore', log, log],
    detached: true,
  });
  closeSync(log);
  writeFileSync(pidFile, String(child.pid));
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = `exited with ${code ?? signal}`));
  const address = `127.0.0.1:${options.port}`;
  const deadline = Date.now() + (options.startTimeoutMs ?? 120_000);
  try {
    await untilDone(address, deadline, () => exited, registerNamespace);
    await untilDone(address, deadline, () => exited, addSearchAttributes);
  } catch (error) {
    child.kill('SIGKILL');
    throw new TemporalServerError(`Temporal server: ${(error as Error).message}; see ${logFile}`);
  }
  return {
    address,
    async stop() {
      if (exited) return;
      await stopChild(child, 'SIGTERM', 15_000);
      rmSync(pidFile, { force: true });
    },
  };
}

/** The server configuration: both stores on PostgreSQL, one cluster, every service on 127.0.0.1. */
async function serverConfig(port: number, database: { host: string; port: number; user: string; password: string }, dynamicConfigFile: string) {
  const store = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `${database.host}:${database.port}`,
      connectProtocol: 'tcp',
      user: database.user,
      password: database.password,
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  // The membership table keeps the port as a SMALLINT: ephemeral ports (32768 and up) do not fit.
  const rpc = async (grpcPort: number) => ({ rpc: { grpcPort, membershipPort: await freePortIn(20_000, 32_767), bindOnIP: '127.0.0.1' } });
  const address = `127.0.0.1:${port}`;
  return {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'default',
      visibilityStore: 'visibility',
      numHistoryShards: HISTORY_SHARDS,
      // The sizes of the server's own PostgreSQL example (config/development-postgres12.yaml).
      datastores: { default: store(DATABASES.default, 20), visibility: store(DATABASES.visibility, 2) },
    },
    global: { membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' } },
    services: {
      frontend: await rpc(port),
      history: await rpc(await freePort()),
      matching: await rpc(await freePort()),
      worker: await rpc(await freePort()),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: { active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: address } },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    publicClient: { hostPort: address },
    dynamicConfigClient: { filepath: dynamicConfigFile, pollInterval: '10s' },
  };
}

/** Runs the SQL tool with its output in the server log. */
function runTool(tools: TemporalServerTools, args: string[], logFile: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const log = openSync(logFile, 'a');
    const child = spawn(tools.sqlTool, args, { stdio: ['ignore', log, log] });
    closeSync(log);
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new TemporalServerError(`temporal-sql-tool ${args.slice(-3).join(' ')} exited with ${code ?? signal}; see ${logFile}`)),
    );
  });
}

/**
 * Retries `step` on a fresh connection until it succeeds: the front end answers before the
 * history and matching services have joined it, and a new namespace reaches the front end's cache
 * a moment after it was written.
 */
async function untilDone(address: string, deadline: number, exited: () => string | undefined, step: (connection: Connection) => Promise<void>): Promise<void> {
  for (;;) {
    const why = exited();
    if (why) throw new Error(why);
    let connection: Connection | undefined;
    try {
      connection = await Connection.connect({ address, connectTimeout: 1_000 });
      await step(connection);
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`not ready on ${address}: ${(error as Error).message}`);
      await sleep(250);
    } finally {
      await connection?.close();
    }
  }
}

async function registerNamespace(connection: Connection): Promise<void> {
  try {
    await connection.workflowService.registerNamespace({ namespace: NAMESPACE, workflowExecutionRetentionPeriod: msToTs(RETENTION) });
  } catch (error) {
    // ALREADY_EXISTS: a second start on the same databases.
    if ((error as { code?: number }).code !== 6) throw error;
  }
}

/**
 * Adds our search attributes (the server skips those it has) and resolves once a visibility query
 * naming all of them is accepted: on SQL visibility they are aliases in the namespace, which the
 * front end sees only after its namespace cache refreshed.
 */
async function addSearchAttributes(connection: Connection): Promise<void> {
  const searchAttributes = Object.fromEntries(Object.entries(SEARCH_ATTRIBUTES).map(([name, type]) => [name, INDEXED_VALUE_TYPES[type]]));
  await connection.operatorService.addSearchAttributes({ namespace: NAMESPACE, searchAttributes });
  const query = Object.entries(SEARCH_ATTRIBUTES)
    .map(([name, type]) => (type === 'Keyword' ? `${name} = ""` : `${name} = 0`))
    .join(' AND ');
  await connection.workflowService.countWorkflowExecutions({ namespace: NAMESPACE, query });
}
