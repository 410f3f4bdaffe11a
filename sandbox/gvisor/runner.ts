/**
 * Runs one command of a sandbox under gVisor: every run is a fresh `runsc run` (its own Sentry,
 * a user-space kernel, and its Gofer) over the sandbox's root read-only and the binds it is
 * given, started through the launcher so that the Sentry, the Gofer and the ptrace stubs are all
 * in the sandbox's cgroup (memory, CPU, freezer, kill). The command runs as the unprivileged
 * sandbox user with no capabilities and no_new_privileges, with no network but a loopback.
 *
 * No seccomp filter of ours is loaded: the command's syscalls are served by the Sentry, which is
 * the boundary, and runsc confines the Sentry and the Gofer with its own host seccomp filters.
 *
 * A run settles when `runsc run` exits, which it does after its Sentry has; a kill goes to the
 * Sentry (every task inside dies with it) and runsc then cleans up after itself. A run killed
 * before runsc had started its Sentry is killed as a whole process group and its state deleted.
 */
import { spawn } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { constants } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { ProviderUnavailableError, type SandboxLimits } from '../provider.js';
import { CappedSink, type RunOutcome, type RunningCommand } from '../process.js';
import type { RunRequest, SandboxBind, SandboxRunner } from '../runner.js';
import { ociSpec } from './oci-spec.js';
import { RunscState } from './state.js';
import { buildStatxShim, STATX_SHIM_SANDBOX_PATH } from './statx-shim.js';

export interface GVisorRunnerOptions {
  /** The runsc binary. Default `runsc` from PATH. */
  runscPath?: string;
  /** gVisor platform. Default `ptrace` (the kvm platform hangs on this kind of machine). */
  platform?: 'ptrace' | 'kvm' | 'systrap';
  /** Host directory for runsc's state, the runs' bundles and the statx shim, root only. Default `/run/agent-rollout-gvisor`. */
  stateDir?: string;
  /**
   * Preload the statx shim (`statx-shim.c`) into every command, so coreutils work under this
   * runsc. Default true.
   */
  statxShim?: boolean;
  /** The C compiler that builds the shim on first use. Default `cc` from PATH. */
  cc?: string;
}

/** Changes to the command's cwd and replaces itself with it: a missing cwd or command is the
 * command's failure (exit 2 / 127), not a failure of runsc to start. `$1` is the cwd. */
const WRAPPER = 'cd -- "$1" || exit 2; shift; exec "$@"';

/** `runsc` exits with this when it could not start the container (and logs why). */
const RUNSC_FAILED = 128;

/** Host tasks of one run besides the command's: runsc, the Gofer, the Sentry's threads (about 45 measured). */
const RUN_HOST_TASKS = 128;
/** Host tasks per process inside the Sentry: a ptrace stub process and its threads (about 10 measured). */
const HOST_TASKS_PER_PROCESS = 16;

/** One entry of runsc's JSON log. */
const LogEntry = z.object({ msg: z.string(), level: z.string() }).loose();

/** The errors runsc logged, in order (its log is JSON objects, one after another). */
function loggedErrors(log: string): string[] {
  const errors: string[] = [];
  for (const piece of log.split(/(?<=\})\s*(?=\{)/)) {
    try {
      const entry = LogEntry.safeParse(JSON.parse(piece));
      if (entry.success && entry.data.level === 'error') errors.push(entry.data.msg);
    } catch {
      // A line runsc did not finish writing (killed): nothing to report from it.
    }
  }
  return errors;
}

/** The Sentry's host pid from runsc's pid file, if that process is still this run's Sentry. */
async function sentryOf(pidFile: string, containerId: string): Promise<number | undefined> {
  const pid = Number(await readFile(pidFile, 'utf8').catch(() => ''));
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  return cmdline.includes(containerId) ? pid : undefined;
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // Gone already.
  }
}

/** What a run needs of its runner. */
interface RunContext {
  runscPath: string;
  flags(logFile: string): string[];
  state: RunscState;
  /** The statx shim on the host, when it is preloaded. */
  shim(): Promise<string | undefined>;
}

/** One `runsc run`: its bundle, its process, its kill. */
class GVisorRun implements RunningCommand {
  readonly done: Promise<RunOutcome>;
  private readonly startedAt = performance.now();
  private readonly bundle: string;
  private readonly logFile: string;
  private readonly pidFile: string;
  private timedOut = false;
  private killed = false;
  private killRequested = false;
  private groupId: number | undefined;

  constructor(
    private readonly ctx: RunContext,
    private readonly request: RunRequest,
    private readonly containerId: string,
  ) {
    this.bundle = ctx.state.bundleDir(containerId);
    this.logFile = join(this.bundle, 'runsc.log');
    this.pidFile = join(this.bundle, 'sentry.pid');
    this.done = this.execute();
  }

  kill(): void {
    this.killed = true;
    this.requestKill();
  }

  private requestKill(): void {
    this.killRequested = true;
    void this.killNow();
  }

  private async killNow(): Promise<void> {
    // Frozen tasks do not die: thaw first.
    await this.request.beforeKill?.().catch(() => undefined);
    const sentry = await sentryOf(this.pidFile, this.containerId);
    if (sentry) killQuietly(sentry);
    else if (this.groupId) killQuietly(-this.groupId);
  }

  private async execute(): Promise<RunOutcome> {
    await this.ctx.state.prepare();
    const shim = await this.ctx.shim();
    await mkdir(this.bundle, { recursive: true, mode: 0o700 });
    try {
      await this.writeSpec(shim);
      // Killed while the bundle was being written: nothing was started.
      if (this.killRequested) return this.outcome(128 + constants.signals.SIGKILL, '', '', false);
      return await this.spawnRunsc();
    } finally {
      if (this.killRequested) {
        // Killed before its Sentry existed, runsc cannot clean up: its state is deleted here.
        if (this.groupId) killQuietly(-this.groupId);
        await this.ctx.state.deleteContainer(this.containerId);
      }
      await rm(this.bundle, { recursive: true, force: true });
    }
  }

  private async writeSpec(shim: string | undefined): Promise<void> {
    const { request } = this;
    const binds: SandboxBind[] = [...request.binds];
    const env = { ...request.env };
    if (shim) {
      binds.push({ hostPath: shim, sandboxPath: STATX_SHIM_SANDBOX_PATH, writable: false });
      env.LD_PRELOAD = [STATX_SHIM_SANDBOX_PATH, env.LD_PRELOAD].filter(Boolean).join(':');
    }
    const spec = ociSpec({
      rootDir: request.rootDir,
      binds,
      env,
      cwd: '/',
      argv: ['/bin/sh', '-c', WRAPPER, 'sandbox-exec', request.cwd, ...request.argv],
      user: request.user,
      shmBytes: request.shmBytes,
      maxProcesses: request.limits.maxProcesses,
    });
    await writeFile(join(this.bundle, 'config.json'), JSON.stringify(spec), { mode: 0o600 });
  }

  private outcome(exitCode: number, stdout: string, stderr: string, truncated: boolean): RunOutcome {
    const { timedOut, killed } = this;
    const durationMs = Math.round(performance.now() - this.startedAt);
    return { exitCode, timedOut, killed, stdout, stderr, truncated, durationMs };
  }

  private spawnRunsc(): Promise<RunOutcome> {
    const { request } = this;
    // runsc dies with this process (its Sentry is attached to it and dies too), as bwrap does
    // with --die-with-parent: a crashed worker leaves no command running.
    const [command, ...prefix] = [
      ...request.launcher(),
      'setpriv',
      '--pdeathsig',
      'KILL',
      '--',
      this.ctx.runscPath,
    ];
    const child = spawn(
      command!,
      [
        ...prefix,
        ...this.ctx.flags(this.logFile),
        'run',
        '--bundle',
        this.bundle,
        '--pid-file',
        this.pidFile,
        this.containerId,
      ],
      {
        stdio: [request.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
        // Its own process group: a kill before the Sentry exists reaches runsc and its Gofer.
        detached: true,
      },
    );
    this.groupId = child.pid;
    if (this.killRequested) void this.killNow();
    const stdout = new CappedSink(child.stdout!, request.maxOutputBytes);
    const stderr = new CappedSink(child.stderr!, request.maxOutputBytes);
    if (request.stdin !== undefined && child.stdin) {
      // A command that exits without reading its stdin closes the pipe: that is not an error.
      child.stdin.on('error', () => {});
      child.stdin.end(request.stdin);
    }
    const timer = setTimeout(() => {
      this.timedOut = true;
      this.requestKill();
    }, request.timeoutMs);
    return new Promise<RunOutcome>((resolve, reject) => {
      child.on('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(
          new ProviderUnavailableError(`cannot run ${this.ctx.runscPath}: ${err.message}`, {
            cause: err,
          }),
        );
      });
      child.on('close', (code: number | null, signal: NodeJS.Signals | null) => {
        clearTimeout(timer);
        const outcome = this.outcome(
          code ?? 128 + (signal ? constants.signals[signal] : 0),
          stdout.text(),
          stderr.text(),
          stdout.truncated || stderr.truncated,
        );
        if (this.killRequested) return resolve(outcome);
        void readFile(this.logFile, 'utf8').then(
          (log) => {
            // 128 is also a status a command may exit with: only runsc's own log tells them
            // apart, and nothing inside the sandbox can write to it.
            const errors = outcome.exitCode === RUNSC_FAILED ? loggedErrors(log) : [];
            if (errors.length === 0) return resolve(outcome);
            reject(
              new ProviderUnavailableError(
                `runsc failed to start sandbox ${request.sandboxId}: ${errors.join('; ')}`,
              ),
            );
          },
          // runsc makes its log first thing: without one, the launcher never got to run it.
          () =>
            reject(
              new ProviderUnavailableError(
                `cannot start runsc for sandbox ${request.sandboxId} (exit ${outcome.exitCode}): ${outcome.stderr.trim()}`,
              ),
            ),
        );
      });
    });
  }
}

export class GVisorRunner implements SandboxRunner {
  readonly name = 'gvisor';
  readonly mountPoints: readonly { path: string; file: boolean }[];
  private readonly ctx: RunContext;
  private readonly stateDir: string;
  private readonly cc: string;
  private readonly useShim: boolean;
  private shimReady: Promise<string> | undefined;
  private runs = 0;

  constructor(options: GVisorRunnerOptions = {}) {
    const runscPath = options.runscPath ?? 'runsc';
    const platform = options.platform ?? 'ptrace';
    this.stateDir = options.stateDir ?? '/run/agent-rollout-gvisor';
    this.cc = options.cc ?? 'cc';
    this.useShim = options.statxShim ?? true;
    this.mountPoints = this.useShim ? [{ path: STATX_SHIM_SANDBOX_PATH, file: true }] : [];
    const state = new RunscState(this.stateDir, runscPath);
    this.ctx = {
      runscPath,
      state,
      flags: (logFile) => [
        `--root=${state.root}`,
        `--platform=${platform}`,
        '--network=none',
        // The gateway bridge is a host Unix socket bound into /tmp: connecting needs this;
        // creating host sockets stays refused.
        '--host-uds=open',
        // The launcher has already put runsc into the sandbox's own cgroup, limits included.
        '--ignore-cgroups',
        // Writes must land in the bound host directories (the disk cap, the host-side reward).
        '--overlay2=none',
        `--log=${logFile}`,
        '--log-format=json',
      ],
      shim: () => this.shim(),
    };
  }

  run(request: RunRequest): RunningCommand {
    return new GVisorRun(this.ctx, request, `${request.sandboxId}-${process.pid}-${this.runs++}`);
  }

  /**
   * The cgroup's process cap leaves room for gVisor's own host tasks; the sandbox's own cap holds
   * inside the Sentry (RLIMIT_NPROC of every run, `oci-spec.ts`).
   */
  hostLimits(limits: Required<SandboxLimits>): Required<SandboxLimits> {
    return { ...limits, maxProcesses: RUN_HOST_TASKS + HOST_TASKS_PER_PROCESS * limits.maxProcesses };
  }

  /** Removes this process's runsc directories once no run is left in them. */
  release(): Promise<void> {
    return this.ctx.state.release();
  }

  private async shim(): Promise<string | undefined> {
    if (!this.useShim) return undefined;
    this.shimReady ??= buildStatxShim(this.stateDir, this.cc);
    // A failed build is tried again by the next run, not cached for ever.
    return this.shimReady.catch((err: unknown) => {
      this.shimReady = undefined;
      throw err;
    });
  }
}
