import type { ChildProcess } from 'node:child_process';

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
