/**
 * What a sandbox sees besides its image: the binds of its spec, and masks over the hidden paths
 * that lie inside one of them. The root is the image (see `layers.ts`), so nothing else of the
 * host is there to hide; a hidden path matters only where a bound host directory holds it.
 */
import { posix } from 'node:path';
import { lstatSync, type Stats } from 'node:fs';
import { InvalidSandboxSpecError } from './provider.js';
import type { SandboxBind, SandboxUser } from './runner.js';

/** The slice of the host filesystem the plan reads; injectable so the plan is testable. */
export interface HostFs {
  /** `undefined` when the path does not exist. Must not follow a final symlink. */
  lstat(path: string): Pick<Stats, 'isDirectory' | 'mode' | 'uid' | 'gid'> | undefined;
}

export const realHostFs: HostFs = {
  lstat(path: string) {
    try {
      return lstatSync(path);
    } catch {
      return undefined;
    }
  },
};

export const WORKSPACE = '/workspace';
export const SANDBOX_TMP = '/tmp';

/** Top-level directories the sandbox always gets fresh: nothing is mounted under them. */
const FRESH_TOP_LEVEL = new Set(['proc', 'dev']);

/** Throws InvalidSandboxSpecError unless `path` can be a mount point inside the sandbox. */
export function checkSandboxPath(path: string): void {
  if (!posix.isAbsolute(path) || posix.normalize(path) !== path || path.endsWith('/')) {
    throw new InvalidSandboxSpecError(`sandbox path must be absolute and normalised: ${path}`);
  }
  if (path === '/' || FRESH_TOP_LEVEL.has(path.split('/')[1] ?? '')) {
    throw new InvalidSandboxSpecError(`cannot mount over ${path}`);
  }
}

export function isUnder(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir === '/' ? '/' : `${dir}/`);
}

/** `/a/b/c` → `['/a', '/a/b']`. */
export function ancestors(path: string): string[] {
  const parts = path.split('/').slice(1, -1);
  return parts.map((_, i) => `/${parts.slice(0, i + 1).join('/')}`);
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

export interface MaskPlan {
  /** Host paths (already resolved with realpath) to hide wherever a bind shows them. */
  hiddenPaths: string[];
  /** The binds of the sandbox whose host paths may hold a hidden path. */
  binds: SandboxBind[];
  /** An empty, read-only host directory bound over a hidden directory. */
  emptyDir: string;
  /** An empty, read-only host file bound over a hidden file (`/dev/null` is unopenable: nodev). */
  emptyFile: string;
  /** A hidden path this user cannot even look up needs no mask (nor could bwrap mount one). */
  user: SandboxUser;
}

/**
 * The read-only binds of empty stand-ins that cover every existing hidden path inside a bind, at
 * the path the sandbox sees it; nested masks are dropped. Append them after `plan.binds`.
 */
export function maskBinds(plan: MaskPlan, fs: HostFs = realHostFs): SandboxBind[] {
  const masks: SandboxBind[] = [];
  for (const bind of plan.binds) {
    const inside = [...new Set(plan.hiddenPaths)]
      .filter((p) => isUnder(p, bind.hostPath) && fs.lstat(p) && reachableBy(p, plan.user, fs))
      .sort();
    for (const hidden of inside.filter((p) => !inside.some((q) => q !== p && isUnder(p, q)))) {
      masks.push({
        hostPath: fs.lstat(hidden)!.isDirectory() ? plan.emptyDir : plan.emptyFile,
        sandboxPath: posix.join(bind.sandboxPath, posix.relative(bind.hostPath, hidden)),
        writable: false,
      });
    }
  }
  return masks;
}
