/**
 * The OCI runtime spec (`config.json` of a bundle) of one gVisor run: the subset of
 * opencontainers/runtime-spec that `runsc run` needs to start one command over a prepared
 * sandbox root. Written fresh for every run; nothing in it comes from the task or the agent
 * except the argv, env and cwd, which only ever reach the Sentry, never the host kernel.
 */

/** A host path shown inside the sandbox (the same shape as the runner's binds). */
export interface OciBindPlan {
  hostPath: string;
  /** Absolute path inside the sandbox; its mount point exists in the root. */
  sandboxPath: string;
  writable: boolean;
}

/** What one run is made of. */
export interface OciRunPlan {
  /** Host directory shown read-only at `/`. */
  rootDir: string;
  /** Applied in order after the root, so a later bind may cover part of an earlier one. */
  binds: OciBindPlan[];
  env: Record<string, string>;
  /** Working directory inside the sandbox, absolute. */
  cwd: string;
  argv: string[];
  user: { uid: number; gid: number };
  /** Size of the private `/dev/shm` tmpfs, bytes. */
  shmBytes: number;
  /** Processes and threads the command may have at once inside the Sentry (RLIMIT_NPROC). */
  maxProcesses: number;
}

export interface OciMount {
  destination: string;
  type: 'bind' | 'proc' | 'tmpfs';
  source: string;
  options?: string[];
}

export interface OciRlimit {
  type: 'RLIMIT_NPROC';
  hard: number;
  soft: number;
}

/** The fields of runtime-spec 1.0 this runner writes. */
export interface OciSpec {
  ociVersion: string;
  process: {
    terminal: false;
    user: { uid: number; gid: number; additionalGids: number[] };
    args: string[];
    /** `KEY=value` entries: the command's whole environment. */
    env: string[];
    cwd: string;
    capabilities: Record<'bounding' | 'effective' | 'inheritable' | 'permitted' | 'ambient', string[]>;
    noNewPrivileges: true;
    rlimits: OciRlimit[];
  };
  root: { path: string; readonly: true };
  hostname: string;
  mounts: OciMount[];
  linux: { namespaces: { type: 'pid' | 'network' | 'ipc' | 'uts' | 'mount' }[] };
}

/** The OCI version the spec claims; runsc 2022 reads 1.0.x. */
const OCI_VERSION = '1.0.2';
const HOSTNAME = 'sandbox';
const NO_CAPABILITIES = {
  bounding: [],
  effective: [],
  inheritable: [],
  permitted: [],
  ambient: [],
};

/** The spec that runs `plan.argv` as the unprivileged user with no capabilities, root read-only. */
export function ociSpec(plan: OciRunPlan): OciSpec {
  const binds: OciMount[] = plan.binds.map((b) => ({
    destination: b.sandboxPath,
    type: 'bind',
    source: b.hostPath,
    options: ['rbind', b.writable ? 'rw' : 'ro', 'nosuid', 'nodev'],
  }));
  return {
    ociVersion: OCI_VERSION,
    process: {
      terminal: false,
      user: { uid: plan.user.uid, gid: plan.user.gid, additionalGids: [] },
      args: plan.argv,
      env: Object.entries(plan.env).map(([k, v]) => `${k}=${v}`),
      cwd: plan.cwd,
      capabilities: NO_CAPABILITIES,
      noNewPrivileges: true,
      // Inside the Sentry, tasks are not host processes: the host pids cgroup counts gVisor's own
      // threads, so the process limit proper is the Sentry's RLIMIT_NPROC.
      rlimits: [{ type: 'RLIMIT_NPROC', hard: plan.maxProcesses, soft: plan.maxProcesses }],
    },
    root: { path: plan.rootDir, readonly: true },
    hostname: HOSTNAME,
    mounts: [
      { destination: '/proc', type: 'proc', source: 'proc' },
      // The Sentry populates its own /dev (null, zero, urandom, pts…); no host device is shown.
      { destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'mode=755'] },
      {
        destination: '/dev/shm',
        type: 'tmpfs',
        source: 'shm',
        options: ['nosuid', 'nodev', 'mode=1777', `size=${plan.shmBytes}`],
      },
      ...binds,
    ],
    linux: {
      namespaces: [
        { type: 'pid' },
        { type: 'network' },
        { type: 'ipc' },
        { type: 'uts' },
        { type: 'mount' },
      ],
    },
  };
}
