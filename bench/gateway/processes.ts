import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readdirSync } from 'node:fs';
import { isRunning, procStat } from '../../sandbox/proc-stat.js';

/** Linux reports CPU time in clock ticks; 100 per second on every mainstream kernel config. */
const CLOCK_TICKS_PER_SECOND = 100;

export class ChildStartError extends Error {
  override name = 'ChildStartError';
}

export interface Child {
  name: string;
  pid: number;
  process: ChildProcess;
  /** The file its stderr (and, for services without a banner, stdout) goes to. */
  logFile: string;
}

/** utime + stime of one process, ms; 0 once it is gone. */
export function ownCpuMs(pid: number): number {
  const stat = procStat(pid);
  return stat ? ((stat.utimeTicks + stat.stimeTicks) * 1000) / CLOCK_TICKS_PER_SECOND : 0;
}

/** The live descendants of `pid`, from /proc. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const child = Number(entry);
    const parent = procStat(child)?.ppid ?? -1;
    children.set(parent, [...(children.get(parent) ?? []), child]);
  }
  const out: number[] = [];
  const queue = [...(children.get(pid) ?? [])];
  while (queue.length > 0) {
    const next = queue.shift()!;
    out.push(next);
    queue.push(...(children.get(next) ?? []));
  }
  return out;
}

/** CPU ms of a process and the descendants it has now (a server's workers). */
export function treeCpuMs(pid: number): number {
  return [pid, ...descendants(pid)].reduce((sum, p) => sum + ownCpuMs(p), 0);
}

/**
 * Every process the benchmark starts, each in its own process group so stopping it reaches its
 * workers too; `stopAll` ends them all, whatever state the run is in.
 */
export class Children {
  private readonly started: Child[] = [];
  /** Descendants seen while running, checked as well at the end. */
  private readonly seen = new Set<number>();

  /** Starts `command`; stdout is piped (for the banner), stderr goes to `logFile`. */
  start(name: string, command: string, args: string[], logFile: string, env: NodeJS.ProcessEnv = process.env): Child {
    const log = openSync(logFile, 'a');
    const proc = spawn(command, args, { stdio: ['ignore', 'pipe', log], detached: true, env });
    closeSync(log);
    if (proc.pid === undefined) throw new ChildStartError(`${name}: could not start ${command}`);
    const child = { name, pid: proc.pid, process: proc, logFile };
    this.started.push(child);
    return child;
  }

  /** Resolves with the first stdout match of `pattern`'s first group; rejects if the child exits first. */
  waitForLine(child: Child, pattern: RegExp, timeoutMs: number): Promise<string> {
    return new Promise((resolve, reject) => {
      let text = '';
      const timer = setTimeout(() => reject(new ChildStartError(`${child.name}: not ready after ${timeoutMs} ms (log: ${child.logFile})`)), timeoutMs);
      const onExit = (code: number | null) => {
        clearTimeout(timer);
        reject(new ChildStartError(`${child.name} exited with ${code} before it was ready (log: ${child.logFile})`));
      };
      child.process.once('exit', onExit);
      child.process.stdout!.on('data', (data: Buffer) => {
        text += data.toString();
        const match = pattern.exec(text);
        if (match) {
          clearTimeout(timer);
          child.process.off('exit', onExit);
          // Keep draining stdout so a chatty child never blocks on a full pipe.
          child.process.stdout!.removeAllListeners('data');
          child.process.stdout!.resume();
          resolve(match[1]!);
        }
      });
    });
  }

  /** Remembers the child's current descendants, so `leftBehind` checks them too. */
  noteDescendants(child: Child): void {
    for (const pid of descendants(child.pid)) this.seen.add(pid);
  }

  /** Stops one child (its whole group): SIGTERM, then SIGKILL after `graceMs`. */
  async stop(child: Child, graceMs = 5000): Promise<void> {
    this.noteDescendants(child);
    const exited = new Promise<void>((resolve) => {
      if (child.process.exitCode !== null || child.process.signalCode !== null) resolve();
      else child.process.once('exit', () => resolve());
    });
    const signal = (s: NodeJS.Signals) => {
      try {
        process.kill(-child.pid, s);
      } catch {
        // The group is already gone.
      }
    };
    signal('SIGTERM');
    const timer = setTimeout(() => signal('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
    // Workers that outlived their parent's exit.
    signal('SIGKILL');
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.started.map((c) => this.stop(c)));
  }

  /** Pids started (or seen as their workers) that are still running. */
  leftBehind(): number[] {
    return [...this.started.map((c) => c.pid), ...this.seen].filter((pid) => isRunning(pid));
  }

  get count(): number {
    return this.started.length + this.seen.size;
  }
}
