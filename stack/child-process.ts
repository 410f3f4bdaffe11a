import type { ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';

/**
 * Stops a server process the stack started: `signal` (its graceful shutdown), then SIGKILL if it
 * has not exited after `graceMs`. Resolves once it has exited.
 */
export async function stopChild(child: ChildProcess, signal: NodeJS.Signals, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const done = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await done;
  clearTimeout(timer);
}

/**
 * Kills a server a crashed predecessor left running (its pid in `pidFile`), when that process's
 * command line still contains `marker` (so a reused pid is left alone); removes the pid file.
 */
export function killStale(pidFile: string, marker: string): void {
  let pid: number;
  try {
    pid = Number(readFileSync(pidFile, 'utf8'));
  } catch {
    return;
  }
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    if (cmdline.includes(marker)) process.kill(pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
  rmSync(pidFile, { force: true });
}
