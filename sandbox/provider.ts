/**
 * The sandbox provider interface (../shared/specs/sandbox.md). A provider needs only create, exec
 * and destroy to be useful; file operations have exec-based defaults in `files.ts`.
 */

/** What to create. */
export interface SandboxSpec {
  /**
   * Episode id + attempt. A retried `create` with the same key returns the sandbox the first call
   * made instead of leaking a second one.
   */
  idempotencyKey: string;
  /**
   * The image the sandbox's root file system comes from (sandbox/images/): an OCI reference
   * (`docker://…`, `oci:…`, `oci-archive:…`, or a bare `name:tag`) or `BASE_IMAGE`. Never the
   * host's root. Default `BASE_IMAGE`.
   */
  image?: string;
  /** Host directory whose files become the private, writable `/workspace`. */
  workspaceDir: string;
  /**
   * The content identity of `workspaceDir` (same key, same files), given by the caller, e.g. a
   * hash of the task's workspace source. With a key, the prepared workspace (the copy and its
   * fresh repository) is made once per provider and shared read-only under every sandbox's
   * copy-on-write layer; a stale key shows stale files. Without one, each create copies
   * `workspaceDir` anew. Default none.
   */
  workspaceKey?: string;
  /**
   * A path in the image that is to be the workspace (SWE-bench's `/testbed`): the sandbox sees a
   * symlink to `/workspace` there, so paths the image was built with still resolve. Default none.
   */
  workspaceLink?: string;
  /**
   * Make `/workspace` a fresh single-commit git repository (no history, branches, tags, remotes).
   * Default true.
   */
  initGitRepo?: boolean;
  /** Host paths mounted read-only inside the sandbox (reward runners, agent sidecars). */
  readOnlyMounts?: { hostPath: string; sandboxPath: string }[];
  /**
   * Sandbox paths outside `/workspace` and `/tmp` made writable: each an empty directory on the
   * sandbox's own writable layer, so within its disk cap, e.g. `/logs/verifier` where a Harbor
   * verifier writes its reward. Default none.
   */
  writableDirs?: string[];
  /**
   * Host paths hidden in this sandbox on top of the provider's own, wherever a read-only mount
   * shows them (the root is an image, so nothing else of the host is there to hide), e.g. the
   * task files of its task, which hold gold patches and hidden tests. Default none.
   */
  hiddenPaths?: string[];
  /**
   * Absolute paths of the image hidden in this sandbox: each is whited out in the sandbox root's
   * top layer, so it reads as absent (e.g. R2E-Gym's `/r2e_tests`, which the reward needs and the
   * agent must not see). None may lie on or under a mount point, the workspace link or a
   * writable directory. Default none.
   */
  hiddenImagePaths?: string[];
  /** Labels the janitor and `list` select on (episode id, batch id, role). */
  labels?: Record<string, string>;
  /** Hard time to live, enforced outside the caller. Default 1 hour. */
  ttlMs?: number;
  /** Resource limits; each one left out takes the provider's default. */
  limits?: SandboxLimits;
}

/** What one sandbox may use, all its commands together. */
export interface SandboxLimits {
  /** Memory (RSS, page cache and tmpfs pages) before the OOM killer stops a process. Default 2 GiB. */
  memoryBytes?: number;
  /** Processes and threads at once. Default 512. */
  maxProcesses?: number;
  /** CPU time per wall-clock second, in cores (0.5 = half a core). Default 1. */
  cpus?: number;
  /** Bytes the sandbox can write: its workspace changes and /tmp together. Default 1 GiB. */
  diskBytes?: number;
}

export interface SandboxInfo {
  id: string;
  labels: Record<string, string>;
  createdAt: number;
  expiresAt: number;
}

export type SandboxState = 'running' | 'paused' | 'gone';

/** What a sandbox uses now; a figure the provider cannot tell is left out. */
export interface SandboxUsage {
  memoryBytes?: number;
  diskBytes?: number;
}

export interface ExecOptions {
  /** Working directory inside the sandbox. Default `/workspace`. */
  cwd?: string;
  env?: Record<string, string>;
  stdin?: string;
  /** Kill the command (and its process tree) after this long. Default 60 s. */
  timeoutMs?: number;
  /** Keep at most this many bytes of stdout and of stderr each. Default 1 MiB. */
  maxOutputBytes?: number;
  /**
   * Kills the command (and its process tree) when aborted; `exec` then rejects with the signal's
   * reason. For a caller that is itself cancelled, e.g. an activity at worker shutdown. Default none.
   */
  signal?: AbortSignal;
}

/** A command that fails or times out is a result, never an exception. */
export interface ExecResult {
  exitCode: number;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  truncated: boolean;
  durationMs: number;
}

/**
 * Host paths of a sandbox's workspace overlay, for reading the agent's changes from outside the
 * sandbox: nothing the agent runs takes part in reading them.
 */
export interface WorkspaceLayers {
  /** The prepared workspace (read-only below the overlay), holding the pristine base repository. */
  lower: string;
  /** The overlay's upper layer: every entry the agent wrote, whiteouts of what it deleted. */
  upper: string;
  /** The overlay itself, as the sandbox sees it at `/workspace`. */
  merged: string;
}

/** An argv, or a shell script run with `/bin/sh -c`. */
export type Command = string[] | { shell: string };

export interface SandboxProvider {
  readonly name: string;
  create(spec: SandboxSpec): Promise<SandboxInfo>;
  exec(id: string, command: Command, options?: ExecOptions): Promise<ExecResult>;
  readFile(id: string, path: string): Promise<Buffer>;
  writeFile(id: string, path: string, data: Buffer | string): Promise<void>;
  /** Never throws: a sandbox that cannot be found is `gone`. */
  status(id: string): Promise<SandboxState>;
  /** The sandbox lives at least `ms` more from now (never shortened; a retry does not add up). */
  extendTtl(id: string, ms: number): Promise<void>;
  /** Idempotent: destroying what is already gone succeeds. */
  destroy(id: string): Promise<void>;
  list(labels?: Record<string, string>): Promise<SandboxInfo[]>;
  /** Unpacks a tar archive into `dir` (default `/workspace`); `tar.ts` has an exec fallback. */
  upload?(id: string, tar: Buffer, dir?: string): Promise<void>;
  /** A tar archive of `dir` (default `/workspace`). */
  download?(id: string, dir?: string): Promise<Buffer>;
  /** Freezes every process of the sandbox; exec refuses with SandboxPausedError until resume. */
  pause?(id: string): Promise<void>;
  resume?(id: string): Promise<void>;
  usage?(id: string): Promise<SandboxUsage>;
  /** Where the workspace's layers are on this host; SandboxGoneError when the sandbox is. */
  workspaceLayers?(id: string): Promise<WorkspaceLayers>;
  /**
   * Optional janitor hook for providers that can leave debris list() cannot show (half-made
   * sandboxes): removes what expired by `now` and returns the ids removed.
   */
  sweepExpired?(now?: number): Promise<string[]>;
  /** Removes the provider's own host directories once no sandbox is left in them (process exit). */
  release?(): Promise<void>;
}

/** Infrastructure failures; `retryable` says whether trying again can help. */
export class SandboxError extends Error {
  override name = 'SandboxError';
  constructor(
    message: string,
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The sandbox no longer exists (TTL passed, janitor, host restart). */
export class SandboxGoneError extends SandboxError {
  override name = 'SandboxGoneError';
  constructor(id: string) {
    super(`sandbox ${id} is gone`, true);
  }
}

/** The provider cannot serve now (tool missing, host overloaded, injected fault). */
export class ProviderUnavailableError extends SandboxError {
  override name = 'ProviderUnavailableError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, true, options);
  }
}

/** Too many sandboxes on this host. */
export class SandboxQuotaError extends SandboxError {
  override name = 'SandboxQuotaError';
  constructor(message: string) {
    super(message, true);
  }
}

/** The spec can never work (missing workspace, bad mount); never retried. */
export class InvalidSandboxSpecError extends SandboxError {
  override name = 'InvalidSandboxSpecError';
  constructor(message: string) {
    super(message, false);
  }
}

/** The sandbox is paused; resume it first. */
export class SandboxPausedError extends SandboxError {
  override name = 'SandboxPausedError';
  constructor(id: string) {
    super(`sandbox ${id} is paused`, true);
  }
}
