import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CLI } from './processes.js';

/**
 * A process that stands for a machine of its own: `rollout <role>` in a private mount namespace,
 * where its data directory and the sandboxes' mount base are fresh tmpfs mounts that no other
 * "host" (nor the test) can see. A defect that leans on a shared local file shows up as it would
 * on separate machines.
 */
export interface TestHost {
  name: string;
  role: string;
  child: ChildProcess;
  /** Everything the process printed so far. */
  output(): string;
  /** Resolves once the output matches. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** SIGKILL: the machine is gone, nothing it held is cleaned up by it. */
  kill(): Promise<void>;
  /** SIGINT, then SIGKILL after a grace period. */
  stop(): Promise<void>;
}

/** Where each host's private data directory is mounted inside its namespace. */
export const HOST_DATA_DIR = '/var/lib/agent-rollout-host';
/** The sandboxes' mount base (sandbox/bubblewrap.ts), private per host as on separate machines. */
const MOUNT_BASE = '/run/agent-rollout';

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())));
}

/**
 * Starts `rollout <role> --config <file>` as host `name`. The configuration is written beside the
 * test's own files (`configDir`), with `dataDir` set to the host's private mount.
 */
export function startHost(options: { name: string; role: string; config: Record<string, unknown>; configDir: string; env?: NodeJS.ProcessEnv }): TestHost {
  mkdirSync(options.configDir, { recursive: true });
  const configFile = path.join(options.configDir, `${options.name}.json`);
  writeFileSync(configFile, JSON.stringify({ ...options.config, dataDir: HOST_DATA_DIR }));
  // `--propagation private`: the tmpfs mounts stay inside this namespace, and none from outside
  // made later leak in.
  const script = [
    `mkdir -p ${HOST_DATA_DIR} ${MOUNT_BASE}`,
    `mount -t tmpfs -o size=2g,mode=0755 tmpfs ${HOST_DATA_DIR}`,
    `mount -t tmpfs -o mode=0755 tmpfs ${MOUNT_BASE}`,
    `exec "$0" "$@"`,
  ].join(' && ');
  const child = spawn('unshare', ['-m', '--propagation', 'private', 'sh', '-c', script, process.execPath, CLI, options.role, '--config', configFile], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...options.env },
  });
  let output = '';
  const listeners = new Set<() => void>();
  const append = (d: Buffer) => {
    output += d.toString();
    for (const l of listeners) l();
  };
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  return {
    name: options.name,
    role: options.role,
    child,
    output: () => output,
    waitFor(pattern, timeoutMs = 120_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (pattern.test(output)) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve();
          } else if (child.exitCode !== null || child.signalCode !== null) {
            listeners.delete(check);
            clearTimeout(timer);
            reject(new Error(`host ${options.name} (${options.role}) exited before ${pattern}:\n${output.slice(-4000)}`));
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`host ${options.name} (${options.role}) did not print ${pattern} in ${timeoutMs} ms:\n${output.slice(-4000)}`));
        }, timeoutMs);
        listeners.add(check);
        child.once('exit', check);
        check();
      });
    },
    async kill() {
      child.kill('SIGKILL');
      await exited(child);
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGINT');
      const done = exited(child);
      if ((await Promise.race([done.then(() => true), sleep(20_000).then(() => false)])) === false) {
        child.kill('SIGKILL');
        await done;
      }
    },
  };
}
