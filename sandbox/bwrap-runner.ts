/**
 * Runs one command of a sandbox with bubblewrap: the launcher puts it under the sandbox's limits
 * and drops to the unprivileged sandbox user, and bwrap starts it in fresh namespaces (no
 * network but loopback, own pids, no capabilities, no further user namespaces) under a seccomp
 * filter (`seccomp.ts`), over the sandbox's root read-only and the binds it is given, and no
 * other host path. See `process.ts` for how the run is watched and killed.
 */
import type { RunRequest, SandboxRunner } from './runner.js';
import { runInBwrap, type RunningCommand } from './process.js';
import { seccompProgram } from './seccomp.js';

export interface BubblewrapRunnerOptions {
  /** The bubblewrap binary. Default `bwrap` from PATH. */
  bwrapPath?: string;
  /** Load the seccomp deny list into every sandbox (x86_64 only). Default true. */
  seccomp?: boolean;
}

/** Namespaces and privileges, identical for every exec. */
const ISOLATION_ARGS = [
  '--unshare-all', // includes the network: only a private loopback remains
  '--unshare-user', // explicit, so --disable-userns is accepted
  '--disable-userns',
  '--cap-drop',
  'ALL',
  '--die-with-parent',
  '--new-session',
  '--clearenv',
];

/** The bwrap arguments that build the sandbox's filesystem, in the order bwrap must apply them. */
export function bwrapMountArgs(
  request: Pick<RunRequest, 'rootDir' | 'binds' | 'shmBytes'>,
): string[] {
  const args = ['--ro-bind', request.rootDir, '/', '--proc', '/proc', '--dev', '/dev'];
  // /dev/shm is writable by every process: a small tmpfs of its own keeps it off the host's RAM.
  args.push('--size', String(request.shmBytes), '--tmpfs', '/dev/shm');
  for (const bind of request.binds) {
    args.push(bind.writable ? '--bind' : '--ro-bind', bind.hostPath, bind.sandboxPath);
  }
  return args;
}

export class BubblewrapRunner implements SandboxRunner {
  readonly name = 'bubblewrap';
  private readonly bwrapPath: string;
  private readonly seccomp: Buffer | undefined;

  constructor(options: BubblewrapRunnerOptions = {}) {
    this.bwrapPath = options.bwrapPath ?? 'bwrap';
    this.seccomp = (options.seccomp ?? true) ? seccompProgram() : undefined;
  }

  run(request: RunRequest): RunningCommand {
    return runInBwrap({
      launcher: request.launcher(request.user),
      bwrapPath: this.bwrapPath,
      bwrapArgs: [
        ...ISOLATION_ARGS,
        ...Object.entries(request.env).flatMap(([k, v]) => ['--setenv', k, v]),
        ...bwrapMountArgs(request),
      ],
      cwd: request.cwd,
      argv: request.argv,
      stdin: request.stdin,
      timeoutMs: request.timeoutMs,
      maxOutputBytes: request.maxOutputBytes,
      seccomp: this.seccomp,
      beforeKill: request.beforeKill,
    });
  }
}
