/**
 * Which new paths of the workspace its `.gitignore` files exclude, so the diff leaves out what
 * `git add -A` would (build output, caches). Git never reads the workspace for it: its work tree
 * is a scratch tree holding copies of the walked directories' `.gitignore` files (read safely by
 * the walk) and the new directories, which directory-only patterns need to see as directories.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { hostGit, type HostGitDirs } from './host-git.js';

/** Workspace paths are kept as latin1 strings: one char per byte, so any file name survives. */
export function pathBytes(root: string, path: string): Buffer {
  return path === ''
    ? Buffer.from(root)
    : Buffer.concat([Buffer.from(`${root}/`), Buffer.from(path, 'latin1')]);
}

/**
 * Time all the checks of one diff may take. The agent's rules can make them slow (thousands of
 * wildcard patterns take minutes over many paths), so running out is the agent's doing
 * (HostGitTimeoutError), which the walk turns into a rejection.
 */
const IGNORE_BUDGET_MS = 60_000;

export class IgnoreCheck {
  private spentMs = 0;

  constructor(private readonly dirs: HostGitDirs) {}

  /** The scratch tree's host path. */
  get root(): string {
    return this.dirs.workTree;
  }

  /** Makes `dir` (a workspace directory) in the scratch tree, with its `.gitignore` if it has one. */
  async addDir(dir: string, gitignore: Buffer | undefined): Promise<void> {
    const at = pathBytes(this.dirs.workTree, dir);
    await mkdir(at, { recursive: true });
    if (gitignore) await writeFile(Buffer.concat([at, Buffer.from('/.gitignore')]), gitignore);
  }

  /** The ones of `entries` (new to the base tree) that are ignored. */
  async ignored(entries: { path: string; dir: boolean }[]): Promise<Set<string>> {
    if (entries.length === 0) return new Set();
    for (const e of entries)
      if (e.dir) await mkdir(pathBytes(this.dirs.workTree, e.path), { recursive: true });
    // `./` first: a name such as `:(exclude)x` is then a path, not pathspec magic (check-ignore
    // refuses magic, and has no literal mode). Git answers with the paths as given.
    const stdin = Buffer.from(entries.map((e) => `./${e.path}\0`).join(''), 'latin1');
    // Exit 1: none of them is ignored.
    const started = performance.now();
    const r = await hostGit(this.dirs, ['check-ignore', '-z', '--stdin'], {
      stdin,
      okCodes: [1],
      timeoutMs: Math.max(1, IGNORE_BUDGET_MS - this.spentMs),
    }).finally(() => (this.spentMs += performance.now() - started));
    return new Set(
      r.stdout
        .toString('latin1')
        .split('\0')
        .filter((p) => p.startsWith('./'))
        .map((p) => p.slice(2)),
    );
  }
}
