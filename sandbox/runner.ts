/**
 * The seam between a local sandbox's host-side lifecycle (`local-provider.ts`: ids, records, TTL,
 * quota, cgroups, layers and mounts on the host, pause, destroy) and the isolation that runs one
 * command in it. The lifecycle prepares everything on the host; a runner only starts the command
 * in fresh isolation over what it is given (bubblewrap: `bwrap-runner.ts`).
 */
import type { SandboxLimits } from './provider.js';
import type { RunningCommand } from './process.js';

/** A host path shown inside the sandbox. */
export interface SandboxBind {
  hostPath: string;
  /** Absolute path inside the sandbox; its mount point already exists in the root. */
  sandboxPath: string;
  /** Read-write (the workspace, /tmp) or read-only (sidecars, masks). */
  writable: boolean;
}

/** The unprivileged host user a sandbox's processes run as. */
export interface SandboxUser {
  uid: number;
  gid: number;
}

/** One command in one prepared sandbox. */
export interface RunRequest {
  /** The sandbox's id (for runners that name their own host state after it). */
  sandboxId: string;
  /**
   * The sandbox's root on the host (the image under the sandbox's overlay), shown read-only at
   * `/`, with the mount point of every bind, `/proc` and `/dev` already made in it.
   */
  rootDir: string;
  /** Applied in order, after the root: a later bind may cover part of an earlier one (a mask). */
  binds: SandboxBind[];
  /** The command's whole environment (nothing of the host's is inherited). */
  env: Record<string, string>;
  /** Absolute working directory inside the sandbox. */
  cwd: string;
  argv: string[];
  stdin?: string;
  timeoutMs: number;
  /** Most bytes kept of stdout and of stderr each. */
  maxOutputBytes: number;
  limits: Required<SandboxLimits>;
  /**
   * The argv prefix that puts what follows it under the sandbox's resource limits (joins its
   * cgroup, or sets rlimits), as `user` when given (else as root), and then execs it.
   */
  launcher(user?: SandboxUser): string[];
  /** Size of the sandbox's private `/dev/shm`. */
  shmBytes: number;
  user: SandboxUser;
  /** Runs before a kill, e.g. thawing a frozen sandbox (frozen tasks do not die). */
  beforeKill?: () => Promise<void>;
}

export interface SandboxRunner {
  /** The provider name a lifecycle with this runner reports (`bubblewrap`, `gvisor`). */
  readonly name: string;
  /**
   * Starts the command. A command that fails or times out settles `done` with its outcome; a
   * runner that cannot start the sandbox at all rejects it with ProviderUnavailableError.
   */
  run(request: RunRequest): RunningCommand;
  /**
   * The limits the sandbox's cgroup (or rlimits) get, from the sandbox's own. Default: the same.
   * A runner whose own machinery runs inside the cgroup (gVisor's Sentry threads and ptrace stubs
   * are host tasks) needs room for it there, and enforces the sandbox's limit itself.
   */
  hostLimits?(limits: Required<SandboxLimits>): Required<SandboxLimits>;
  /**
   * Sandbox paths the runner binds on its own (a library it preloads): the lifecycle makes them
   * mount points in every root, as the runner cannot in a shared read-only root. Default none.
   */
  readonly mountPoints?: readonly { path: string; file: boolean }[];
  /** Removes the runner's own host directories once no run is left in them (process exit). */
  release?(): Promise<void>;
}
