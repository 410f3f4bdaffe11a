import type { TestProject } from 'vitest/node';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { removePostgresCluster, startPostgresCluster } from '../../stack/postgres-cluster.js';
import { freePort } from '../../stack/ports.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Superuser URL of the run's PostgreSQL cluster; tests take a database of their own (`freshDatabase`). */
    postgresUrl: string;
  }
}

/** One private PostgreSQL cluster for the whole test run, stopped and removed at the end. */
export default async function setup(project: TestProject) {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'rollout-postgres-'));
  const cluster = await startPostgresCluster({ dataDir, port: await freePort() });
  project.provide('postgresUrl', cluster.url);
  return async () => {
    await cluster.stop();
    removePostgresCluster(dataDir);
  };
}
