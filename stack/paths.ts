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
    images: path.join(dataDir, 'images'),
    agentState: path.join(dataDir, 'agent-state'),
    agentLogs: path.join(dataDir, 'agent-logs'),
    exports: path.join(dataDir, 'batches'),
    adminToken: path.join(dataDir, 'admin-token'),
    apiToken: path.join(dataDir, 'api-token'),
  };
}

/** Creates the data directory's folders that processes write into. */
export function makeDataDirs(dataDir: string): void {
  const paths = dataPaths(dataDir);
  for (const dir of [paths.dataDir, paths.sandboxes, paths.agentState, paths.agentLogs, paths.exports]) mkdirSync(dir, { recursive: true });
}

/** A secret made once in `file` (mode 0600) and read by every process that shares the data directory. */
function mintedToken(dataDir: string, file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    mkdirSync(dataDir, { recursive: true });
    const token = randomBytes(24).toString('hex');
    writeFileSync(file, token, { mode: 0o600, flag: 'wx' });
    return token;
  }
}

/** The gateway's admin token, made once per data directory. */
export function adminToken(dataDir: string): string {
  return mintedToken(dataDir, dataPaths(dataDir).adminToken);
}

/** The batch API's bearer token, made once per data directory; trainers read it from `<dataDir>/api-token`. */
export function mintedApiToken(dataDir: string): string {
  return mintedToken(dataDir, dataPaths(dataDir).apiToken);
}
