/**
 * The bubblewrap mount plan: which bwrap arguments build a sandbox's filesystem.
 *
 * The host root is shown read-only, but not with a single `--ro-bind / /`: on a read-only root
 * bwrap cannot create mount points such as `/workspace` or `/opt/agent-rollout/reward` that do not
 * exist on the host. So the sandbox root is bwrap's own tmpfs, every host top-level entry is bound
 * into it read-only, and a directory on the way to a missing mount point is "opened up": made as
 * an empty directory on that tmpfs with its host children bound into it one by one.
 */
import { posix } from 'node:path';
import { lstatSync, readdirSync, readlinkSync, type Stats } from 'node:fs';
import { InvalidSandboxSpecError } from './provider.js';

/** The slice of the host filesystem the plan reads; injectable so the plan is testable. */
export interface HostFs {
  /** `undefined` when the path does not exist. Must not follow a final symlink. */
  lstat(
    path: string,
  ): Pick<Stats, 'isDirectory' | 'isSymbolicLink' | 'mode' | 'uid' | 'gid'> | undefined;
  readdir(path: string): string[];
  readlink(path: string): string;
}

export const realHostFs: HostFs = {
  lstat(path: string) {
    try {
      return lstatSync(path);
    } catch {
      return undefined;
    }
  },
  readdir: (path: string): string[] => readdirSync(path).sort(),
  readlink: (path: string): string => readlinkSync(path),
};

export interface MountPlan {
  /** Host directory bound read-write at `/workspace`. */
  workspaceHostDir: string;
  /** Host directory bound read-write at `/tmp` (and so `HOME`); persists across execs. */
  tmpHostDir: string;
  /** Host paths (already resolved with realpath) hidden behind an empty tmpfs or empty file. */
  maskedPaths: string[];
  /** An empty, read-only host file bound over masked files (`/dev/null` would be unopenable: nodev). */
  emptyFile: string;
  readOnlyMounts: { hostPath: string; sandboxPath: string }[];
  /** Host directories bound read-write at sandbox paths (`SandboxSpec.writableDirs`). Default none. */
  writableDirs?: { hostPath: string; sandboxPath: string }[];
  /**
   * Host paths left out of the sandbox altogether (their parents are opened up so siblings still
   * show): the mount root, where other sandboxes' mounts come and go. bwrap binds a top-level
   * entry recursively, and a submount unmounted by a concurrent destroy while bwrap binds it makes
   * bwrap fail. Default none.
   */
  unboundPaths?: string[];
  /**
   * The host user bwrap runs as. A masked path this user cannot even look up needs no mask (and
   * bwrap, running as that user, could not mount one there). Default: mask everything.
   */
  sandboxUser?: SandboxUser;
  /** Size of the sandbox's `/dev/shm`. Default 64 MiB. */
  shmBytes?: number;
}

export interface SandboxUser {
  uid: number;
  gid: number;
}

export const WORKSPACE = '/workspace';
const DEFAULT_SHM_BYTES = 64 * 1024 * 1024;

/** Top-level host entries the sandbox never sees: it gets fresh ones. */
const FRESH_TOP_LEVEL = new Set(['proc', 'dev', 'tmp']);

/** Throws InvalidSandboxSpecError unless `path` can be a mount point inside the sandbox. */
export function checkSandboxPath(path: string): void {
  if (!posix.isAbsolute(path) || posix.normalize(path) !== path || path.endsWith('/')) {
    throw new InvalidSandboxSpecError(`sandbox path must be absolute and normalised: ${path}`);
  }
  const top = path.split('/')[1] ?? '';
  if (path === '/' || top === 'proc' || top === 'dev') {
    throw new InvalidSandboxSpecError(`cannot mount over ${path}`);
  }
}

function isUnder(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir === '/' ? '/' : `${dir}/`);
}

/** `/a/b/c` → `['/a', '/a/b']`. */
function ancestors(path: string): string[] {
  const parts = path.split('/').slice(1, -1);
  return parts.map((_, i) => `/${parts.slice(0, i + 1).join('/')}`);
}

/** Host directories that must be opened up so that `targets` can be created as mount points. */
function dirsToOpen(targets: string[], fs: HostFs): Set<string> {
  const open = new Set<string>(['/']);
  for (const target of targets) {
    if (FRESH_TOP_LEVEL.has(target.split('/')[1] ?? '') || fs.lstat(target)) continue;
    for (const dir of ancestors(target)) {
      const stat = fs.lstat(dir);
      if (!stat) break;
      if (!stat.isDirectory()) {
        throw new InvalidSandboxSpecError(`mount point ${target} crosses ${dir}, not a directory`);
      }
      open.add(dir);
    }
  }
  return open;
}

function rootArgs(dir: string, open: Set<string>, unbound: Set<string>, fs: HostFs): string[] {
  const args: string[] = [];
  for (const name of fs.readdir(dir)) {
    if (dir === '/' && FRESH_TOP_LEVEL.has(name)) continue;
    const path = posix.join(dir, name);
    if (unbound.has(path)) continue;
    const stat = fs.lstat(path);
    if (!stat) continue;
    if (open.has(path)) {
      args.push(
        '--perms',
        (stat.mode & 0o7777).toString(8),
        '--dir',
        path,
        ...rootArgs(path, open, unbound, fs),
      );
    } else if (stat.isSymbolicLink()) {
      args.push('--symlink', fs.readlink(path), path);
    } else {
      // -try: an entry removed since readdir is not worth failing the command for.
      args.push('--ro-bind-try', path, path);
    }
  }
  return args;
}

/** Whether `user` (with no supplementary groups) can look `path` up: search on every ancestor. */
export function reachableBy(path: string, user: SandboxUser, fs: HostFs = realHostFs): boolean {
  return ['/', ...ancestors(path)].every((dir) => {
    const stat = fs.lstat(dir);
    if (!stat) return false;
    const bit = stat.uid === user.uid ? 0o100 : stat.gid === user.gid ? 0o010 : 0o001;
    return (stat.mode & bit) !== 0;
  });
}

/** Whether `user` can reach and read `path` (and list it, for a directory). */
export function readableBy(path: string, user: SandboxUser, fs: HostFs = realHostFs): boolean {
  const stat = fs.lstat(path);
  if (!stat || !reachableBy(path, user, fs)) return false;
  const shift = stat.uid === user.uid ? 6 : stat.gid === user.gid ? 3 : 0;
  const need = stat.isDirectory() ? 0o5 : 0o4;
  return ((stat.mode >> shift) & need) === need;
}

/** Hidden paths worth masking: existing, reachable, outside the fresh /tmp, /proc and /dev, not nested. */
function masks(paths: string[], fs: HostFs, user: SandboxUser | undefined): string[] {
  const candidates = [...new Set(paths)]
    .filter((p) => !FRESH_TOP_LEVEL.has(p.split('/')[1] ?? '') && fs.lstat(p))
    .filter((p) => !user || reachableBy(p, user, fs))
    .sort();
  return candidates.filter((p) => !candidates.some((q) => q !== p && isUnder(p, q)));
}

/** The bwrap arguments that build the sandbox filesystem, in the order bwrap must apply them. */
export function mountArgs(plan: MountPlan, fs: HostFs = realHostFs): string[] {
  const writable = plan.writableDirs ?? [];
  const targets = [WORKSPACE, ...[...plan.readOnlyMounts, ...writable].map((m) => m.sandboxPath)];
  const unbound = new Set(plan.unboundPaths ?? []);
  const open = dirsToOpen(targets, fs);
  for (const path of unbound) for (const dir of ancestors(path)) open.add(dir);
  const args = rootArgs('/', open, unbound, fs);
  args.push('--proc', '/proc', '--dev', '/dev', '--bind', plan.tmpHostDir, '/tmp');
  // /dev/shm is writable by every process: a small tmpfs of its own keeps it off the host's RAM.
  args.push('--size', String(plan.shmBytes ?? DEFAULT_SHM_BYTES), '--tmpfs', '/dev/shm');
  const shown = plan.maskedPaths.filter((p) => ![...unbound].some((u) => isUnder(p, u)));
  for (const path of masks(shown, fs, plan.sandboxUser)) {
    // Read-only and tiny: a mask must not become a writable layer outside the disk cap.
    if (fs.lstat(path)?.isDirectory())
      args.push('--size', '4096', '--tmpfs', path, '--remount-ro', path);
    else args.push('--ro-bind', plan.emptyFile, path);
  }
  args.push('--bind', plan.workspaceHostDir, WORKSPACE);
  for (const [m, bind] of [
    ...plan.readOnlyMounts.map((m) => [m, '--ro-bind'] as const),
    ...writable.map((m) => [m, '--bind'] as const),
  ]) {
    // Parents bwrap would create implicitly get mode 0700; make them traversable like /usr.
    for (const dir of ancestors(m.sandboxPath).filter((d) => !fs.lstat(d)))
      args.push('--perms', '0755', '--dir', dir);
    args.push(bind, m.hostPath, m.sandboxPath);
  }
  return args;
}
