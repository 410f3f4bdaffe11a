import type { TestProject } from 'vitest/node';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDevServer } from '../../stack/temporal-dev-server.js';
import { freePort } from '../../stack/ports.js';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
  }
}

/** One real Temporal dev server (the CLI built from source) for the whole test run. */
export default async function setup(project: TestProject) {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'rollout-temporal-'));
  const server = await startDevServer({ dataDir, port: await freePort(), uiPort: 0 });
  project.provide('temporalAddress', server.address);
  return async () => {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
}
