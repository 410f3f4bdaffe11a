/**
 * The workspace of a task whose repository lives inside its image (`workspace.kind: image`, e.g.
 * SWE-bench's `/testbed`): the files at that path in the image, copied out ONCE per image digest
 * and path into the workspace cache, without any `.git` (an image's repository carries its whole
 * history, fix commits included). The sandbox provider then makes its fresh single-commit
 * repository of them and shares that prepared layer between sandboxes. Paths left out of a copy
 * (the task's hidden paths, for the agent) make another copy, under another name.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { lstat, mkdir, mkdtemp, rm, rmdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { ImageRoot } from '../sandbox/images/types.js';
import { dropGitDirs, publishScratch, WorkspaceError } from './workspace.js';

const execFileAsync = promisify(execFile);

/** The image has nothing usable at the workspace path, or it cannot be read. */
export class ImageWorkspaceError extends WorkspaceError {
  override name = 'ImageWorkspaceError';
}

const pending = new Map<string, Promise<string>>();

/**
 * The host directory holding the files at `path` inside `image`, under `cacheDir`, without the
 * entries at `exclude` (paths relative to `path`; default none). Concurrent callers share one
 * copy; a copy made by another process is reused.
 */
export function imageWorkspaceDir(
  image: ImageRoot,
  path: string,
  cacheDir: string,
  exclude: string[] = [],
): Promise<string> {
  const left = [...new Set(exclude)].sort();
  const key = createHash('sha256')
    .update(JSON.stringify(left.length > 0 ? [image.digest, path, left] : [image.digest, path]))
    .digest('hex');
  const target = join(resolve(cacheDir), `image-${key.slice(0, 24)}`);
  let copy = pending.get(target);
  if (!copy) {
    copy = copyOut(image, path, target, left).finally(() => pending.delete(target));
    pending.set(target, copy);
  }
  return copy;
}

async function isDir(path: string): Promise<boolean> {
  return stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );
}

async function run(file: string, args: string[], what: string): Promise<void> {
  try {
    await execFileAsync(file, args, { maxBuffer: 4 * 1024 * 1024 });
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr?.trim();
    throw new ImageWorkspaceError(`${what} failed: ${stderr || (err as Error).message}`, {
      cause: err,
    });
  }
}

/**
 * Removes `rel` from the copy at `dir`. The copy's symlinks are the image's: one on the way
 * could lead the removal out of the copy, and would show the path to the agent anyway.
 */
async function removeInside(dir: string, rel: string): Promise<void> {
  const parts = rel.split('/');
  for (let i = 1; i < parts.length; i++) {
    const s = await lstat(join(dir, ...parts.slice(0, i))).catch(() => undefined);
    if (s === undefined) return;
    if (!s.isDirectory()) {
      throw new ImageWorkspaceError(`cannot leave out ${rel}: ${parts.slice(0, i).join('/')} is not a directory in the image`);
    }
  }
  await rm(join(dir, rel), { recursive: true, force: true });
}

async function copyOut(
  image: ImageRoot,
  path: string,
  target: string,
  exclude: string[],
): Promise<string> {
  if (await isDir(target)) return target;
  await mkdir(resolve(target, '..'), { recursive: true });
  const scratch = `${target}.${randomBytes(4).toString('hex')}.tmp`;
  // The image's merged view: one layer is itself; more are stacked read-only (topmost first).
  const mountPoint = image.layers.length > 1 ? await mkdtemp(`${target}.mnt-`) : undefined;
  try {
    if (mountPoint) {
      const lower = [...image.layers].reverse().join(':');
      await run(
        'mount',
        ['-t', 'overlay', '-o', `ro,lowerdir=${lower}`, 'image-workspace', mountPoint],
        'mounting the image',
      );
    }
    const source = join(mountPoint ?? image.layers[0]!, path);
    if (!(await isDir(source))) {
      throw new ImageWorkspaceError(`image ${image.digest} has no directory at ${path}`);
    }
    await mkdir(scratch);
    await run('cp', ['-a', '--', `${source}/.`, scratch], `copying ${path} out of the image`);
    await dropGitDirs(scratch);
    for (const rel of exclude) await removeInside(scratch, rel);
    await publishScratch(scratch, target);
    return target;
  } catch (err) {
    await rm(scratch, { recursive: true, force: true });
    throw err;
  } finally {
    if (mountPoint) {
      await execFileAsync('umount', [mountPoint]).catch(() =>
        execFileAsync('umount', ['-l', mountPoint]),
      );
      await rmdir(mountPoint).catch(() => undefined);
    }
  }
}
