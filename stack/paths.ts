import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** Where everything of one installation lives under its data directory. */
export function dataPaths(dataDir: string) {
  return {
    dataDir,
    temporal: path.join(dataDir, 'temporal'),
    store: path.join(dataDir, 'trajectories.sqlite'),
    scheduler: path.join(dataDir, 'scheduler.sqlite'),
    sandboxes: path.join(dataDir, 'sandboxes'),
    agentState: path.join(dataDir, 'agent-state'),
    agentLogs: path.join(dataDir, 'agent-logs'),
    exports: path.join(dataDir, 'batches'),
    adminToken: path.join(dataDir, 'admin-token'),
  };
}

/** Creates the data directory's folders that processes write into. */
export function makeDataDirs(dataDir: string): void {
  const paths = dataPaths(dataDir);
  for (const dir of [paths.dataDir, paths.sandboxes, paths.agentState, paths.agentLogs, paths.exports]) mkdirSync(dir, { recursive: true });
}

/**
 * The gateway's admin token, made once per data directory (mode 0600) and read by every worker
 * that shares it.
 */
export function adminToken(dataDir: string): string {
  const file = dataPaths(dataDir).adminToken;
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    mkdirSync(dataDir, { recursive: true });
    const token = randomBytes(24).toString('hex');
    writeFileSync(file, token, { mode: 0o600, flag: 'wx' });
    return token;
  }
}
