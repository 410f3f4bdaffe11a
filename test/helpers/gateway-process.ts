import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { EngineInstance, GatewayOptions } from '../../gateway/server.js';
import { PROJECT_ROOT } from '../../stack/temporal-binary.js';
import { TEST_ADMIN_TOKEN } from './gateway.js';
import { waitForExit } from './processes.js';

const CHILD = path.join(PROJECT_ROOT, 'test', 'helpers', 'gateway-child.ts');

export interface GatewayProcess {
  url: string;
  child: ChildProcess;
  /** What the process wrote to stderr so far (replica events). */
  output(): string;
  /** SIGKILL: the replica dies without closing anything, as a crashed host's would. */
  kill(): Promise<void>;
}

/** A gateway replica in its own process over a store file, as a second host would run it (the test admin token). */
export function spawnGateway(options: { storeFile: string; engines: EngineInstance[]; replica: GatewayOptions['replica'] }): Promise<GatewayProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify({ ...options, adminToken: TEST_ADMIN_TOKEN })], { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  return new Promise((resolve, reject) => {
    let stdout = '';
    child.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
      const url = /listening (\S+)/.exec(stdout)?.[1];
      if (url) {
        resolve({
          url,
          child,
          output: () => output,
          async kill() {
            child.kill('SIGKILL');
            await waitForExit(child);
          },
        });
      }
    });
    child.once('exit', (code) => reject(new Error(`gateway process exited (${code}) before listening: ${output}`)));
  });
}
