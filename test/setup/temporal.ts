import type { TestProject } from 'vitest/node';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDevServer } from '../../stack/temporal-dev-server.js';
import { freePort } from '../../stack/ports.js';
import { BubblewrapProvider } from '../../sandbox/bubblewrap.js';
import { dataPaths } from '../../stack/paths.js';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    /** Folder under which test stacks keep their data dirs; removed, with their sandboxes, at the end of the run. */
    testDataRoot: string;
  }
}

/**
 * One real Temporal dev server (the CLI built from source) for the whole test run, and one folder
 * for the test stacks' data. At the end, the sandboxes a stack left behind (a stack stopped while
 * episodes ran, a SIGKILLed worker) are removed with their mounts and cgroups, which live outside
 * the data dir, and then the folder goes.
 */
export default async function setup(project: TestProject) {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'rollout-temporal-'));
  const testDataRoot = mkdtempSync(path.join(os.tmpdir(), 'rollout-run-'));
  const server = await startDevServer({ dataDir, port: await freePort(), uiPort: 0 });
  project.provide('temporalAddress', server.address);
  project.provide('testDataRoot', testDataRoot);
  return async () => {
    await server.stop();
    for (const stack of readdirSync(testDataRoot)) {
      const provider = new BubblewrapProvider({ rootDir: dataPaths(path.join(testDataRoot, stack)).sandboxes });
      await provider.sweepExpired(Number.MAX_SAFE_INTEGER);
      await provider.release();
    }
    rmSync(testDataRoot, { recursive: true, force: true });
    rmSync(dataDir, { recursive: true, force: true });
  };
}
