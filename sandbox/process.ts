/**
 * Running one command under bwrap: output caps, stdin, timeout, and killing the whole sandbox.
 *
 * Every run has its own pid namespace, whose init is a bwrap process (its host pid and namespace
 * inode come from `--json-status-fd`). The kernel kills every process in a pid namespace when its
 * init dies, and the init only turns zombie once the namespace is empty. The outer bwrap, though,
 * exits as soon as the command itself exits, while a daemonised child may still hold the init up;
 * so a run settles only after its init has been killed and has turned zombie (or is gone). Then
 * nothing the run started is left on the host, whether it finished, timed out or was killed.
 */
import { spawn } from 'node:child_process';
import { readlinkSync } from 'node:fs';
import { constants } from 'node:os';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import type { Readable, Writable } from 'node:stream';
import { ProviderUnavailableError } from './provider.js';
import { procStat } from './proc-stat.js';

/**
 * bwrap reports here the init's pid and namespaces, then the command's `exit-code` once it has
 * exited, but only if its setup succeeded and the command was exec'd. Closed in the sandbox.
 */
const STATUS_FD = 3;
/** bwrap reads the compiled seccomp program from here (and closes it before the command). */
const SECCOMP_FD = 4;

/**
 * What bwrap prints when it cannot change to the cwd or exec the command; no sandboxed process
 * has run then, so nothing else wrote to stderr. Both are the command's failure, not the
 * provider's, with a shell's status: 2 for a directory `cd` cannot enter, 127 for a command
 * not found, 126 for one that cannot be run.
 */
function commandFailure(stderr: string, cwd: string, file: string): number | undefined {
  if (stderr.startsWith(`bwrap: Can't chdir to ${cwd}: `)) return 2;
  const exec = `bwrap: execvp ${file}: `;
  if (!stderr.startsWith(exec)) return undefined;
  const reason = stderr.slice(exec.length).trim();
  return reason === 'No such file or directory' || reason === 'Not a directory' ? 127 : 126;
}

export interface BwrapRunRequest {
  /**
   * Runs bwrap: an argv prefix (cgroup join, rlimits, dropping to the sandbox user) that ends by
   * exec'ing the rest of the argv. Default: none.
   */
  launcher?: string[];
  bwrapPath: string;
  /** bwrap options (namespaces, mounts, env); the cwd and the command are appended. */
  bwrapArgs: string[];
  cwd: string;
  argv: string[];
  stdin?: string;
  timeoutMs: number;
  maxOutputBytes: number;
  /** A compiled seccomp BPF program bwrap loads before the command. Default: none. */
  seccomp?: Buffer;
  /** Runs before a kill, e.g. thawing a frozen sandbox (frozen tasks do not die). */
  beforeKill?: () => Promise<void>;
}

export interface RunOutcome {
  exitCode: number;
  timedOut: boolean;
  /** Stopped by `kill()` (the sandbox is being destroyed). */
  killed: boolean;
  stdout: string;
  stderr: string;
  truncated: boolean;
  durationMs: number;
}

/** A started run: `done` settles once every process of the sandbox run is gone. */
export interface RunningCommand {
  done: Promise<RunOutcome>;
  kill(): void;
}

/** Keeps the first `limit` bytes of a stream and drains the rest. */
export class CappedSink {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  truncated = false;

  constructor(
    stream: Readable,
    private readonly limit: number,
  ) {
    stream.on('data', (chunk: Buffer) => {
      const room = this.limit - this.size;
      if (chunk.length > room) this.truncated = true;
      if (room <= 0) return;
      const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
      this.chunks.push(kept);
      this.size += kept.length;
    });
  }

  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

interface SandboxInit {
  pid: number;
  pidNamespace: number;
}

/**
 * `undefined` once the pid is gone or no longer that namespace's init; else its state letter.
 * Read synchronously: procfs never waits on a disk, and a trip to the thread pool costs more.
 */
function initState(init: SandboxInit): string | undefined {
  try {
    if (readlinkSync(`/proc/${init.pid}/ns/pid`) !== `pid:[${init.pidNamespace}]`) return undefined;
  } catch {
    return undefined;
  }
  return procStat(init.pid)?.state;
}

/**
 * Rounds of `killInit` that look again at once rather than after a millisecond: an init that
 * has just closed its pipes is still tearing its namespace down, which takes well under one.
 */
const QUICK_ROUNDS = 20;

/** Kills the namespace's init and resolves once the namespace is empty (init zombie or gone). */
async function killInit(init: SandboxInit): Promise<void> {
  for (
    let state = initState(init), round = 0;
    state !== undefined && state !== 'Z' && state !== 'X';
    state = initState(init), round++
  ) {
    try {
      process.kill(init.pid, 'SIGKILL');
    } catch {
      return; // gone between the check and the kill
    }
    await (round < QUICK_ROUNDS ? nextTurn() : sleep(1));
  }
}

export function runInBwrap(req: BwrapRunRequest): RunningCommand {
  const startedAt = performance.now();
  const [command, ...prefix] = [...(req.launcher ?? []), req.bwrapPath];
  const child = spawn(
    command!,
    [
      ...prefix,
      '--json-status-fd',
      String(STATUS_FD),
      ...(req.seccomp ? ['--seccomp', String(SECCOMP_FD)] : []),
      ...req.bwrapArgs,
      // bwrap changes to the cwd and execs the command itself: no shell in between.
      '--chdir',
      req.cwd,
      '--',
      ...req.argv,
    ],
    {
      stdio: [
        req.stdin === undefined ? 'ignore' : 'pipe',
        'pipe',
        'pipe',
        'pipe',
        req.seccomp ? 'pipe' : 'ignore',
      ],
    },
  );
  if (req.seccomp) {
    const seccompPipe = (child.stdio as unknown as Writable[])[SECCOMP_FD]!;
    // bwrap that fails before reading it closes the pipe: its own error is reported instead.
    seccompPipe.on('error', () => {});
    seccompPipe.end(req.seccomp);
  }
  const stdout = new CappedSink(child.stdout!, req.maxOutputBytes);
  const stderr = new CappedSink(child.stderr!, req.maxOutputBytes);

  let timedOut = false;
  let killed = false;
  let started = false;
  let init: SandboxInit | undefined;
  // Kills go to the init, never to the outer bwrap: killed during setup, the outer can leave its
  // init blocked for ever, waiting on it before --die-with-parent is armed. A kill requested
  // before bwrap has reported the init happens when it does.
  let killRequested = false;
  const killSandbox = (): void => {
    killRequested = true;
    const prepared = req.beforeKill?.().catch(() => undefined) ?? Promise.resolve();
    void prepared.then(() => (init ? killInit(init) : undefined));
  };

  // One JSON object a line: first the init's pid and namespaces, at the end the exit code.
  let status = '';
  (child.stdio[STATUS_FD] as Readable).on('data', (chunk: Buffer) => {
    status += chunk.toString('utf8');
    const lines = status.split('\n');
    status = lines.pop()!;
    for (const line of lines) {
      let parsed: { 'child-pid'?: number; 'pid-namespace'?: number; 'exit-code'?: number };
      try {
        parsed = JSON.parse(line) as typeof parsed;
      } catch {
        continue; // not bwrap's JSON: the run counts as not started, and says so
      }
      if (parsed['exit-code'] !== undefined) started = true;
      if (parsed['child-pid'] !== undefined && parsed['pid-namespace'] !== undefined) {
        const found = { pid: parsed['child-pid'], pidNamespace: parsed['pid-namespace'] };
        init = found;
        if (killRequested)
          void (req.beforeKill?.() ?? Promise.resolve()).finally(() => killInit(found));
      }
    }
  });

  if (req.stdin !== undefined && child.stdin) {
    // A command that exits without reading its stdin closes the pipe: that is not an error.
    child.stdin.on('error', () => {});
    child.stdin.end(req.stdin);
  }

  const timer = setTimeout(() => {
    timedOut = true;
    killSandbox();
  }, req.timeoutMs);

  const done = new Promise<RunOutcome>((resolve, reject) => {
    child.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(
        new ProviderUnavailableError(`cannot run ${req.bwrapPath}: ${err.message}`, { cause: err }),
      );
    });
    child.on('close', async (code: number | null, signal: NodeJS.Signals | null) => {
      clearTimeout(timer);
      const durationMs = Math.round(performance.now() - startedAt);
      if (init) await killInit(init);
      const outcome: RunOutcome = {
        exitCode: code ?? 128 + (signal ? constants.signals[signal] : 0),
        timedOut,
        killed,
        stdout: stdout.text(),
        stderr: stderr.text(),
        truncated: stdout.truncated || stderr.truncated,
        durationMs,
      };
      const failure = started ? undefined : commandFailure(outcome.stderr, req.cwd, req.argv[0]!);
      if (failure !== undefined) {
        resolve({ ...outcome, exitCode: failure });
      } else if (!started && !timedOut && !killed) {
        reject(
          new ProviderUnavailableError(
            `bwrap failed to start the sandbox: ${outcome.stderr.trim()}`,
          ),
        );
      } else {
        resolve(outcome);
      }
    });
  });

  return {
    done,
    kill: (): void => {
      killed = true;
      killSandbox();
    },
  };
}
