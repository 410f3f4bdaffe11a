import { Connection } from '@temporalio/client';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SEARCH_ATTRIBUTES } from '../workflows/search-attributes.js';
import { findTemporalBinary } from './temporal-binary.js';
import { killStale, stopChild } from './child-process.js';

export interface DevServerOptions {
  /** Directory for the SQLite file and the server log. */
  dataDir: string;
  /** Front-end gRPC port. */
  port: number;
  /** Web UI port; 0 disables the UI. */
  uiPort: number;
  /** How long to wait for the server to answer. Default 60 s. */
  startTimeoutMs?: number;
}

export interface DevServer {
  address: string;
  uiUrl: string | null;
  stop(): Promise<void>;
}

export class DevServerError extends Error {
  override name = 'DevServerError';
}

/**
 * Starts `temporal server start-dev` with state in `<dataDir>/temporal.sqlite` (so a second run
 * sees the first run's history) and our search attributes registered; resolves once the front end
 * answers.
 */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  mkdirSync(options.dataDir, { recursive: true });
  const logFile = path.join(options.dataDir, 'temporal-server.log');
  const log = openSync(logFile, 'a');
  const args = [
    'server', 'start-dev',
    '--db-filename', path.join(options.dataDir, 'temporal.sqlite'),
    '--ip', '127.0.0.1',
    '--port', String(options.port),
    ...(options.uiPort > 0 ? ['--ui-port', String(options.uiPort)] : ['--headless']),
    ...Object.entries(SEARCH_ATTRIBUTES).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]),
    '--log-level', 'warn',
    // WAL with normal sync: the dev server's default journal fsyncs every commit, which caps a
    // 2-core machine at a few dozen activities per second.
    '--sqlite-pragma', 'journal_mode=wal',
    '--sqlite-pragma', 'synchronous=normal',
  ];
  const pidFile = path.join(options.dataDir, 'server.pid');
  killStale(pidFile, 'start-dev');
  // Its own process group: Ctrl-C in a terminal reaches only us, and we stop the server after the
  // worker and the batch are done with it. The pid file lets the next start clean up after a crash.
  const child: ChildProcess = spawn(findTemporalBinary(), args, { stdio: ['ignore', log, log], detached: true });
  writeFileSync(pidFile, String(child.pid));
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = `exited with ${code ?? signal}`));
  const address = `127.0.0.1:${options.port}`;
  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  for (;;) {
    if (exited) throw new DevServerError(`Temporal dev server ${exited}; see ${logFile}`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1_000 });
      await connection.workflowService.getSystemInfo({});
      await connection.close();
      break;
    } catch (error) {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new DevServerError(`Temporal dev server did not answer on ${address}: ${(error as Error).message}; see ${logFile}`);
      }
      await sleep(250);
    }
  }
  return {
    address,
    uiUrl: options.uiPort > 0 ? `http://127.0.0.1:${options.uiPort}` : null,
    async stop() {
      if (exited) return;
      await stopChild(child, 'SIGTERM', 10_000);
      rmSync(pidFile, { force: true });
    },
  };
}
