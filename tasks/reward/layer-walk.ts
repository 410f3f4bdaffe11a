/**
 * What the agent changed in its workspace, found on the host from the overlay's layers. Every
 * entry the agent touched has a copy (or a whiteout) in the upper layer, so only directories
 * present there are walked; each is listed in the merged view and in the lower layer, and a
 * lower entry the merged view lacks was deleted (a whiteout, or an opaque directory). Entries are
 * only listed and lstat'ed here: contents are read later, by `host-blobs.ts`.
 *
 * Left out, as git would: any `.git` (the agent's repository is not its work; one below the top
 * is listed in `skipped`), a symlinked `.gitmodules`, ignored new paths, and FIFOs, sockets and
 * devices (listed).
 */
import { isUtf8 } from 'node:buffer';
import { lstat, readdir, readlink } from 'node:fs/promises';
import { isUtf8File, openRegular, type SkipReason } from './host-blobs.js';
import { HostGitTimeoutError } from './host-git.js';
import { pathBytes, type IgnoreCheck } from './ignore-check.js';

/** The base commit's tree: file paths with their modes, and every directory on the way to them. */
export interface BaseTree {
  files: Map<string, string>;
  dirs: Set<string>;
  /** `files`' paths in byte order, to find those under a deleted directory. */
  sorted: string[];
}

export interface WorkspaceRoots {
  lower: string;
  upper: string;
  merged: string;
}

export interface Skipped {
  path: string;
  why: SkipReason;
}

export interface WalkedChanges {
  /** New or changed paths to store from the merged view. */
  writes: { path: string; kind: 'file' | 'symlink' }[];
  /** Paths of the base tree that are gone (a file, or every file under a directory). */
  deletes: string[];
  skipped: Skipped[];
  /** Why the changes are too many or too large to score. */
  rejected?: string;
}

export interface WalkLimits {
  /** Most entries the walk may find touched. */
  maxPaths: number;
  /** Largest regular file taken. */
  maxFileBytes: number;
}

/** Linux's longest path, terminating NUL included. */
const PATH_MAX = 4096;
/** The largest `.gitignore` the ignore check is shown (the rules' cost grows with their count). */
const MAX_GITIGNORE_BYTES = 256 * 1024;

const join = (dir: string, name: string): string => (dir === '' ? name : `${dir}/${name}`);
const isGitName = (name: string): boolean => name.toLowerCase() === '.git';

/** Names in a directory (latin1), none when it is not one. */
async function names(root: string, dir: string): Promise<Set<string>> {
  try {
    const list = await readdir(pathBytes(root, dir), { encoding: 'buffer' });
    return new Set(list.map((b) => b.toString('latin1')));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return new Set();
    throw err;
  }
}

/** The base tree's files at or under `path`. */
export function baseFilesUnder(base: BaseTree, path: string): string[] {
  const found = base.files.has(path) ? [path] : [];
  const prefix = `${path}/`;
  let lo = 0;
  let hi = base.sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (base.sorted[mid]! < prefix) lo = mid + 1;
    else hi = mid;
  }
  for (let i = lo; i < base.sorted.length && base.sorted[i]!.startsWith(prefix); i++)
    found.push(base.sorted[i]!);
  return found;
}

/** A walked directory's `.gitignore`, if it is a regular file the ignore check may be shown. */
async function gitignoreOf(merged: string, dir: string): Promise<Buffer | undefined> {
  const opened = await openRegular(pathBytes(merged, join(dir, '.gitignore')));
  if ('skip' in opened) return undefined;
  if (opened.size > MAX_GITIGNORE_BYTES) {
    await opened.fh.close();
    return undefined;
  }
  try {
    const buf = Buffer.alloc(opened.size);
    const { bytesRead } = await opened.fh.read(buf, 0, opened.size, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await opened.fh.close();
  }
}

/** Breadth first, a level at a time, so the ignore check runs once per level and ignored trees are never walked. */
export async function walkChanges(
  roots: WorkspaceRoots,
  base: BaseTree,
  ignores: IgnoreCheck,
  limits: WalkLimits,
): Promise<WalkedChanges> {
  const out: WalkedChanges = { writes: [], deletes: [], skipped: [] };
  // The host's roots are longer than the sandbox's /workspace: a path the agent could make may
  // not fit in PATH_MAX here. Such a path is skipped, not an error of the host.
  const longestRoot = Math.max(
    ...[roots.lower, roots.upper, roots.merged, ignores.root].map((r) => Buffer.byteLength(r)),
  );
  const tooLong = (path: string): boolean => longestRoot + 1 + path.length >= PATH_MAX;
  /** Adds a write, or rejects the changes when it is a file too large to diff (then false). */
  const take = (w: { path: string; kind: 'file' | 'symlink'; size?: number }): boolean => {
    if (w.kind === 'file' && (w.size ?? 0) > limits.maxFileBytes) {
      out.rejected = `${printable(w.path)} is ${w.size} bytes, more than ${limits.maxFileBytes}`;
      return false;
    }
    out.writes.push({ path: w.path, kind: w.kind });
    return true;
  };
  let touched = 0;
  let level = [''];
  while (level.length > 0) {
    const next: string[] = [];
    const fresh: { path: string; dir: boolean; kind?: 'file' | 'symlink'; size?: number }[] = [];
    for (const dir of level) {
      await ignores.addDir(dir, await gitignoreOf(roots.merged, dir));
      const [upper, merged, lower] = await Promise.all([
        names(roots.upper, dir),
        names(roots.merged, dir),
        // Only a directory of the base tree is a real directory in the lower layer (a symlink of the
        // task's is not listed through).
        dir === '' || base.dirs.has(dir) ? names(roots.lower, dir) : new Set<string>(),
      ]);
      for (const name of lower)
        if (!merged.has(name) && !isGitName(name)) out.deletes.push(join(dir, name));
      for (const name of merged) {
        const path = join(dir, name);
        if (tooLong(path)) {
          out.skipped.push({ path, why: 'unreadable' });
          continue;
        }
        if (isGitName(name)) {
          if (dir !== '') out.skipped.push({ path, why: 'git_path' });
          continue;
        }
        // Neither written nor redirected by the agent: the base's own entry.
        if (!upper.has(name) && lower.has(name)) continue;
        if (++touched > limits.maxPaths) {
          out.rejected = `more than ${limits.maxPaths} changed paths`;
          return out;
        }
        const st = await lstat(pathBytes(roots.merged, path));
        const inBase = base.files.has(path) || base.dirs.has(path);
        if (st.isDirectory()) {
          // A directory where the base has a file: the file is gone.
          if (base.files.has(path)) out.deletes.push(path);
          if (base.dirs.has(path)) next.push(path);
          else fresh.push({ path, dir: true });
          continue;
        }
        // A file where the base has a directory (or a file of another kind): the old entries go first.
        if (base.dirs.has(path)) out.deletes.push(path);
        if (!st.isFile() && !st.isSymbolicLink()) {
          if (base.files.has(path)) out.deletes.push(path);
          out.skipped.push({ path, why: 'special_file' });
          continue;
        }
        const kind = st.isFile() ? 'file' : 'symlink';
        // Git refuses a symlinked .gitmodules (it could point a submodule anywhere).
        if (kind === 'symlink' && name.toLowerCase() === '.gitmodules') {
          out.skipped.push({ path, why: 'git_path' });
          continue;
        }
        if (!inBase) fresh.push({ path, dir: false, kind, size: st.size });
        else if (!take({ path, kind, size: st.size })) return out;
      }
    }
    const ignored = await ignores.ignored(fresh).catch((err: unknown) => {
      if (err instanceof HostGitTimeoutError) return undefined;
      throw err;
    });
    if (!ignored) {
      out.rejected = 'the .gitignore rules took too long to apply';
      return out;
    }
    for (const entry of fresh) {
      if (ignored.has(entry.path)) continue;
      if (!entry.kind) next.push(entry.path);
      else if (!take({ path: entry.path, kind: entry.kind, size: entry.size })) return out;
    }
    level = next;
  }
  return out;
}

/** Whether the base's content at `path` (in the trusted lower layer) is UTF-8. */
export async function lowerIsUtf8(lower: string, path: string): Promise<boolean> {
  const at = pathBytes(lower, path);
  if ((await lstat(at)).isSymbolicLink()) return isUtf8(await readlink(at, { encoding: 'buffer' }));
  const opened = await openRegular(at);
  // Anything else: call it binary, which any content survives.
  if ('skip' in opened) return false;
  return isUtf8File(opened);
}

/** A workspace path for people: its bytes as UTF-8 where they are. */
export function printable(path: string): string {
  return Buffer.from(path, 'latin1').toString('utf8');
}
