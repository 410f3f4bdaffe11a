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
import { ProviderUnavailableError } from '../provider.js';
import { CappedSink, type RunOutcome, type RunningCommand } from '../process.js';
import type { SandboxLimits } from '../provider.js';
import type { RunRequest, SandboxRunner } from '../runner.js';
import { ociSpec } from './oci-spec.js';
import { RunscState } from './state.js';

export interface GVisorRunnerOptions {
  /** The runsc binary. Default `runsc` from PATH. */
  runscPath?: string;
  /** gVisor platform. Default `ptrace` (the kvm platform hangs on this kind of machine). */
  platform?: 'ptrace' | 'kvm' | 'systrap';
  /** Host directory for runsc's state and the runs' bundles, root only. Default `/run/agent-rollout-gvisor`. */
  stateDir?: string;
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

export class GVisorRunner implements SandboxRunner {
  readonly name = 'gvisor';
  private readonly runscPath: string;
  private readonly platform: string;
  private readonly state: RunscState;
  private runs = 0;

  constructor(options: GVisorRunnerOptions = {}) {
    this.runscPath = options.runscPath ?? 'runsc';
    this.platform = options.platform ?? 'ptrace';
    this.state = new RunscState(options.stateDir ?? '/run/agent-rollout-gvisor', this.runscPath);
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
    return this.state.release();
  }

  /** runsc's global flags for one run. */
  private flags(logFile: string): string[] {
    return [
      `--root=${this.state.root}`,
      `--platform=${this.platform}`,
      '--network=none',
      // The gateway bridge is a host Unix socket bound into /tmp: connecting needs this; creating
      // host sockets stays refused.
      '--host-uds=open',
      // The launcher has already put runsc into the sandbox's own cgroup, limits included.
      '--ignore-cgroups',
      // Writes must land in the bound host directories (the disk cap, the host-side reward).
      '--overlay2=none',
      `--log=${logFile}`,
      '--log-format=json',
    ];
  }

  run(request: RunRequest): RunningCommand {
    const startedAt = performance.now();
    const containerId = `${request.sandboxId}-${process.pid}-${this.runs++}`;
    const bundle = this.state.bundleDir(containerId);
    const logFile = join(bundle, 'runsc.log');
    const pidFile = join(bundle, 'sentry.pid');
    let timedOut = false;
    let killed = false;
    let killRequested = false;
    let groupId: number | undefined;
    let sentryPid: number | undefined;

    const killNow = async (): Promise<void> => {
      // Frozen tasks do not die: thaw first.
      await request.beforeKill?.().catch(() => undefined);
      sentryPid ??= await sentryOf(pidFile, containerId);
      if (sentryPid) killQuietly(sentryPid);
      else if (groupId) killQuietly(-groupId);
    };
    const kill = (): void => {
      killRequested = true;
      void killNow();
    };

    const done = (async (): Promise<RunOutcome> => {
      await this.state.prepare();
      await mkdir(bundle, { recursive: true, mode: 0o700 });
      const spec = ociSpec({
        rootDir: request.rootDir,
        binds: request.binds,
        env: request.env,
        cwd: '/',
        argv: ['/bin/sh', '-c', WRAPPER, 'sandbox-exec', request.cwd, ...request.argv],
        user: request.user,
        shmBytes: request.shmBytes,
        maxProcesses: request.limits.maxProcesses,
      });
      await writeFile(join(bundle, 'config.json'), JSON.stringify(spec), { mode: 0o600 });
      try {
        return await this.spawnRun(request, containerId, bundle, logFile, pidFile, {
          onSpawn: (pgid) => {
            groupId = pgid;
            if (killRequested) void killNow();
          },
          startedAt,
          outcomeFlags: () => ({ timedOut, killed }),
          onTimeout: () => {
            timedOut = true;
            kill();
          },
        });
      } finally {
        if (killRequested) {
          // Killed before its Sentry existed, runsc cannot clean up: its state is deleted here.
          if (groupId) killQuietly(-groupId);
          await this.state.deleteContainer(containerId);
        }
        await rm(bundle, { recursive: true, force: true });
      }
    })();

    return {
      done,
      kill: (): void => {
        killed = true;
        kill();
      },
    };
  }

  private spawnRun(
    request: RunRequest,
    containerId: string,
    bundle: string,
    logFile: string,
    pidFile: string,
    hooks: {
      onSpawn(pgid: number): void;
      startedAt: number;
      outcomeFlags(): { timedOut: boolean; killed: boolean };
      onTimeout(): void;
    },
  ): Promise<RunOutcome> {
    const [command, ...prefix] = [...request.launcher, this.runscPath];
    const child = spawn(
      command!,
      [
        ...prefix,
        ...this.flags(logFile),
        'run',
        '--bundle',
        bundle,
        '--pid-file',
        pidFile,
        containerId,
      ],
      {
        stdio: [request.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
        // Its own process group: a kill before the Sentry exists reaches runsc and its Gofer.
        detached: true,
      },
    );
    if (child.pid !== undefined) hooks.onSpawn(child.pid);
    const stdout = new CappedSink(child.stdout!, request.maxOutputBytes);
    const stderr = new CappedSink(child.stderr!, request.maxOutputBytes);
    if (request.stdin !== undefined && child.stdin) {
      // A command that exits without reading its stdin closes the pipe: that is not an error.
      child.stdin.on('error', () => {});
      child.stdin.end(request.stdin);
    }
    const timer = setTimeout(hooks.onTimeout, request.timeoutMs);
    return new Promise<RunOutcome>((resolve, reject) => {
      child.on('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(
          new ProviderUnavailableError(`cannot run ${this.runscPath}: ${err.message}`, {
            cause: err,
          }),
        );
      });
      child.on('close', (code: number | null, signal: NodeJS.Signals | null) => {
        clearTimeout(timer);
        const { timedOut, killed } = hooks.outcomeFlags();
        const outcome: RunOutcome = {
          exitCode: code ?? 128 + (signal ? constants.signals[signal] : 0),
          timedOut,
          killed,
          stdout: stdout.text(),
          stderr: stderr.text(),
          truncated: stdout.truncated || stderr.truncated,
          durationMs: Math.round(performance.now() - hooks.startedAt),
        };
        if (timedOut || killed || outcome.exitCode !== RUNSC_FAILED) return resolve(outcome);
        // 128 is also a status a command may exit with: only runsc's own log tells them apart,
        // and nothing inside the sandbox can write to it.
        void readFile(logFile, 'utf8')
          .catch(() => '')
          .then((log) => {
            const errors = loggedErrors(log);
            if (errors.length === 0) return resolve(outcome);
            reject(
              new ProviderUnavailableError(
                `runsc failed to start sandbox ${request.sandboxId}: ${errors.join('; ')}`,
              ),
            );
          });
      });
    });
  }
}
