/**
 * The agent's changes as one git diff, read by the host from the sandbox's writable layer
 * (../../../shared/specs/sandbox.md, "Rewards that resist hacking"): nothing runs in the sandbox
 * and nothing the agent wrote steers git. The base is the pristine repository of the prepared
 * workspace layer, which the agent never could write; its `.git` in the workspace (deleted,
 * corrupted, given hooks or diff drivers) plays no part. Whatever the agent left is a result:
 * too large is `rejected`, a FIFO is `skipped`; only the machinery failing throws.
 *
 * How: walk the overlay's upper layer for what changed (layer-walk.ts), store the new contents as
 * blobs in a scratch object directory whose alternate is the pristine one (host-blobs.ts),
 * build the new tree in a scratch index, and `git diff-tree` the base against it. Contents that
 * are not UTF-8 (old or new) go into a second tree diffed as binary, so the diff is a string that
 * `git apply` takes back byte for byte.
 */
import { mkdir, mkdtemp, readlink, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxError, type SandboxProvider } from '../../sandbox/provider.js';
import { BlobPack, openRegular, type SkipReason } from './host-blobs.js';
import { hostGit, WorkspaceDiffError, type HostGitDirs } from './host-git.js';
import { IgnoreCheck, pathBytes } from './ignore-check.js';
import {
  baseFilesUnder,
  lowerIsUtf8,
  printable,
  walkChanges,
  type BaseTree,
  type WorkspaceRoots,
} from './layer-walk.js';

export { WorkspaceDiffError } from './host-git.js';

/** Largest diff scored: 64 MiB. A larger one is `rejected`. */
export const MAX_DIFF_BYTES = 64 * 1024 * 1024;
/** Most changed paths scored; more is `rejected` (each costs a diff section of 100+ bytes). */
export const MAX_CHANGED_PATHS = 200_000;
/** How many skipped paths the result lists. */
const MAX_SKIPPED_LISTED = 100;

export interface WorkspaceChanges {
  /** `git apply`-able (`--binary`, `a/` `b/` prefixes, no renames); empty when nothing changed or rejected. */
  diff: string;
  /** Paths left out (at most MAX_SKIPPED_LISTED, the first found), with why; `path` is for people. */
  skipped: { path: string; why: SkipReason }[];
  /** Why the changes cannot be scored (too large, too many); the reward is then 0 `diff_rejected`. */
  rejected?: string;
}

const ZERO_SHA = '0'.repeat(40);
/** Pinned format, whatever git's defaults: the form `git apply` and diff.ts expect. */
const DIFF_FLAGS = [
  'diff-tree',
  '-r',
  '-p',
  '--binary',
  '--no-color',
  '--no-ext-diff',
  '--no-textconv',
  '--no-renames',
  '--src-prefix=a/',
  '--dst-prefix=b/',
];

/** Reads the changes of sandbox `sandboxId` from its layers on this host. */
export async function workspaceDiff(
  provider: SandboxProvider,
  sandboxId: string,
): Promise<WorkspaceChanges> {
  if (!provider.workspaceLayers)
    throw new SandboxError(`${provider.name} cannot show a sandbox's workspace layers`, false);
  const layers = await provider.workspaceLayers(sandboxId);
  const scratch = await mkdtemp(join(tmpdir(), 'agent-rollout-diff-'));
  try {
    // Real paths, so an open file's /proc path can be compared with the path asked for.
    const [lower, upper, merged] = await Promise.all(
      [layers.lower, layers.upper, layers.merged].map((p) => realpath(p)),
    );
    return await diffLayers({ lower: lower!, upper: upper!, merged: merged! }, scratch);
  } catch (err) {
    if (err instanceof SandboxError || err instanceof WorkspaceDiffError) throw err;
    throw new WorkspaceDiffError(
      `reading the workspace of ${sandboxId}: ${(err as Error).message}`,
      { cause: err },
    );
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

async function diffLayers(roots: WorkspaceRoots, scratch: string): Promise<WorkspaceChanges> {
  const dirs: HostGitDirs = {
    gitDir: join(roots.lower, '.git'),
    objectDir: join(scratch, 'objects'),
    indexFile: join(scratch, 'index'),
    workTree: join(scratch, 'tree'),
  };
  await Promise.all([mkdir(dirs.objectDir), mkdir(dirs.workTree)]);
  const head = await hostGit(dirs, ['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], {
    okCodes: [1, 128],
  });
  const baseCommit = head.stdout.toString().trim();
  if (head.code !== 0 || !/^[0-9a-f]{40}$/.test(baseCommit))
    throw new WorkspaceDiffError(`no base repository in the prepared workspace ${roots.lower}`);
  const base = await baseTree(dirs, baseCommit);
  await hostGit(dirs, ['read-tree', baseCommit]);

  const walked = await walkChanges(roots, base, new IgnoreCheck(dirs), {
    maxPaths: MAX_CHANGED_PATHS,
    maxFileBytes: MAX_DIFF_BYTES,
  });
  const skipped = walked.skipped
    .slice(0, MAX_SKIPPED_LISTED)
    .map((s) => ({ path: printable(s.path), why: s.why }));
  if (walked.rejected) return { diff: '', skipped, rejected: walked.rejected };

  // Index lines, each with whether its diff can be text: removals first, so a path that changed
  // between file and directory is free for its new entries.
  const lines: { path: string; line: string; text: boolean }[] = [];
  for (const gone of walked.deletes) {
    for (const path of baseFilesUnder(base, gone))
      lines.push({
        path,
        line: `0 ${ZERO_SHA}\t${path}`,
        text: await lowerIsUtf8(roots.lower, path),
      });
  }
  const blobs = new BlobPack(dirs);
  const stored = await inParallel(walked.writes, (w) => store(blobs, roots.merged, w));
  await blobs.finish();
  for (const [i, { path }] of walked.writes.entries()) {
    const entry = stored[i]!;
    if ('skip' in entry) {
      if (skipped.length < MAX_SKIPPED_LISTED)
        skipped.push({ path: printable(path), why: entry.skip });
      continue;
    }
    const text = entry.utf8 && (!base.files.has(path) || (await lowerIsUtf8(roots.lower, path)));
    lines.push({ path, line: `${entry.mode} ${entry.sha}\t${path}`, text });
  }

  const binary = binaryPaths(lines);
  const textTree = await treeWith(
    dirs,
    lines.filter((l) => !binary.has(l.path)),
  );
  const tooLarge = {
    diff: '',
    skipped,
    rejected: `the diff is larger than ${MAX_DIFF_BYTES} bytes`,
  };
  const text = await diff(dirs, baseCommit, textTree, MAX_DIFF_BYTES);
  if (!text) return tooLarge;
  if (binary.size === 0) return { diff: text.toString('utf8'), skipped };
  const fullTree = await treeWith(
    dirs,
    lines.filter((l) => binary.has(l.path)),
  );
  const attributesFile = join(scratch, 'binary-attributes');
  await writeFile(attributesFile, '* -diff\n');
  const rest = await diff(dirs, textTree, fullTree, MAX_DIFF_BYTES - text.length, attributesFile);
  if (!rest) return tooLarge;
  return { diff: Buffer.concat([text, rest]).toString('utf8'), skipped };
}

type Stored = { mode: string; sha: string; utf8: boolean } | { skip: SkipReason };

/** One changed path's content as a blob, read from the merged view without following links. */
async function store(
  blobs: BlobPack,
  merged: string,
  write: { path: string; kind: 'file' | 'symlink' },
): Promise<Stored> {
  const at = pathBytes(merged, write.path);
  if (write.kind === 'symlink') {
    // readlink reads the link itself, never its target.
    const target = await readlink(at, { encoding: 'buffer' }).catch(
      (err: NodeJS.ErrnoException) => {
        // No longer a symlink, or gone: the agent changed it meanwhile.
        if (err.code === 'EINVAL' || err.code === 'ENOENT' || err.code === 'ENOTDIR')
          return undefined;
        throw err;
      },
    );
    return target
      ? { mode: '120000', ...(await blobs.bytes(target)) }
      : { skip: 'changed_while_read' };
  }
  const opened = await openRegular(at);
  if ('skip' in opened) return opened;
  const blob = await blobs.file(opened, MAX_DIFF_BYTES);
  return blob
    ? { mode: opened.executable ? '100755' : '100644', ...blob }
    : { skip: 'changed_while_read' };
}

/** Files read at once: enough to hide each one's round trips to the thread pool, few enough to bound memory. */
const PARALLEL_READS = 4;

async function inParallel<T, R>(items: T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_READS, items.length) }, worker));
  return out;
}

/**
 * Paths whose diff must be binary, grown to every path above or below one of them: the binary
 * part is diffed against the text part's tree, which must not need a path to be a file and a
 * directory at once.
 */
function binaryPaths(lines: { path: string; text: boolean }[]): Set<string> {
  const binary = new Set(lines.filter((l) => !l.text).map((l) => l.path));
  for (let grew = binary.size > 0; grew; ) {
    grew = false;
    const above = new Set<string>();
    for (const p of binary)
      for (let i = p.indexOf('/'); i >= 0; i = p.indexOf('/', i + 1)) above.add(p.slice(0, i));
    for (const l of lines) {
      if (binary.has(l.path)) continue;
      const parts = l.path.split('/');
      const under = parts.some((_, i) => i > 0 && binary.has(parts.slice(0, i).join('/')));
      if (under || above.has(l.path)) {
        binary.add(l.path);
        grew = true;
      }
    }
  }
  return binary;
}

/** The base tree read once: every file with its mode, every directory on the way. */
async function baseTree(dirs: HostGitDirs, commit: string): Promise<BaseTree> {
  const r = await hostGit(dirs, ['ls-tree', '-r', '-z', '--full-tree', commit]);
  const files = new Map<string, string>();
  const treeDirs = new Set<string>();
  for (const record of r.stdout.toString('latin1').split('\0')) {
    const tab = record.indexOf('\t');
    if (tab < 0) continue;
    const path = record.slice(tab + 1);
    files.set(path, record.slice(0, record.indexOf(' ')));
    for (let i = path.indexOf('/'); i >= 0; i = path.indexOf('/', i + 1))
      treeDirs.add(path.slice(0, i));
  }
  return { files, dirs: treeDirs, sorted: [...files.keys()].sort() };
}

/** Applies `lines` to the scratch index and writes its tree. */
async function treeWith(dirs: HostGitDirs, lines: { line: string }[]): Promise<string> {
  if (lines.length > 0) {
    const stdin = Buffer.from(lines.map((l) => `${l.line}\0`).join(''), 'latin1');
    await hostGit(dirs, ['update-index', '-z', '--index-info'], { stdin });
  }
  return (await hostGit(dirs, ['write-tree'])).stdout.toString().trim();
}

/** `from` against `to`, or `undefined` past `max` bytes. No index: no attributes but the file given. */
async function diff(
  dirs: HostGitDirs,
  from: string,
  to: string,
  max: number,
  attributesFile?: string,
): Promise<Buffer | undefined> {
  const r = await hostGit(dirs, [...DIFF_FLAGS, from, to], {
    maxStdout: max,
    attributesFile,
    indexFile: join(dirs.workTree, '..', 'no-index'),
  });
  return r.overflow ? undefined : r.stdout;
}
