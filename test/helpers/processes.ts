import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../../stack/config.js';
import { PROJECT_ROOT } from '../../stack/temporal-binary.js';

export const CLI = path.join(PROJECT_ROOT, 'cli', 'bin.mjs');

/** Runs `rollout worker` as its own process, joined to a stack started by the test. */
export function spawnWorker(config: Config, gatewayUrl: string): { child: ChildProcess; output: () => string } {
  const file = path.join(config.dataDir, `worker-${Date.now()}.json`);
  writeFileSync(file, JSON.stringify({ ...config, gateway: { ...config.gateway, url: gatewayUrl } }));
  const child = spawn(process.execPath, [CLI, 'worker', '--config', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  return { child, output: () => output };
}

/** Runs the CLI to completion. */
export function runCli(args: string[], cwd = PROJECT_ROOT): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

export function waitForExit(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())));
}

/** Runs `rollout gateway` as its own process over `config`; resolves once it listens. */
export function spawnGatewayRole(config: Config): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const file = path.join(config.dataDir, `gateway-${Date.now()}.json`);
  writeFileSync(file, JSON.stringify(config));
  const child = spawn(process.execPath, [CLI, 'gateway', '--config', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((resolve, reject) => {
    const onData = (d: Buffer) => {
      output += d.toString();
      const url = /gateway listening on (\S+)/.exec(output)?.[1];
      if (url) resolve({ child, url, output: () => output });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`rollout gateway exited (${code}) before listening: ${output}`)));
  });
}
