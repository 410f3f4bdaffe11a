/**
 * Sandbox roots: an image's layers under a thin top layer holding the mount points the sandboxes
 * need (and the workspace link), mounted once as a read-only overlay and shared by every sandbox
 * with the same image and the same mount points. Read-only with no upper layer, it is the same
 * for all of them, and a create costs no mount for its root.
 *
 *   <layersDir>/<key>/   the top layer: the mount points, the link and the whiteouts of hidden
 *                        image paths, nothing else
 *   <mountsDir>/<key>/   the overlay: top layer over the image's layers, bound read-only at /
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmod, chown, lstat, mkdir, readdir, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { ancestors } from './mounts.js';
import type { Mounter } from './mounter.js';
import { InvalidSandboxSpecError } from './provider.js';

const execFileAsync = promisify(execFile);

/** What a sandbox's root holds on top of its image. */
export interface RootPlan {
  /** The image's layer directories, lowest first. */
  imageLayers: string[];
  /** Absolute sandbox paths to be mount points: directories, or files for a bound file. */
  mountPoints: { path: string; file: boolean }[];
  /**
   * A sandbox path to become a symlink to `target`, replacing what the image has there. No
   * mount point may lie on or under it (the caller checks).
   */
  link?: { path: string; target: string };
  /** Image paths to hide: each becomes an overlayfs whiteout in the top layer. Default none. */
  whiteouts?: string[];
}

/** The same plan, the same key: sandboxes whose roots would be identical share one. */
export function rootPlanKey(plan: RootPlan): string {
  const points = [...plan.mountPoints].sort((a, b) => a.path.localeCompare(b.path));
  return createHash('sha256')
    .update(JSON.stringify([plan.imageLayers, points, plan.link ?? null, [...(plan.whiteouts ?? [])].sort()]))
    .digest('hex')
    .slice(0, 24);
}

const exists = (path: string): Promise<boolean> =>
  lstat(path).then(
    () => true,
    () => false,
  );

/** The topmost image layer's entry at `path`, if it is a directory (a whiteout hides it). */
async function imageDir(layers: string[], path: string): Promise<{ mode: number; uid: number; gid: number } | undefined> {
  for (const layer of [...layers].reverse()) {
    const s = await lstat(join(layer, path)).catch(() => undefined);
    if (s) return s.isDirectory() ? s : undefined;
  }
  return undefined;
}

/** Whether the image has any entry at `path` (a whiteout hides it). */
async function imageHas(layers: string[], path: string): Promise<boolean> {
  for (const layer of [...layers].reverse()) {
    const s = await lstat(join(layer, path)).catch(() => undefined);
    if (s) return !(s.isCharacterDevice() && s.rdev === 0);
  }
  return false;
}

/**
 * Makes `path` (and its parents) in `top`, a fresh directory of ours: no symlink of the image is
 * followed on the host. A parent the image has as a directory keeps its owner and mode (the top
 * layer's copy is what the merged root shows); a new one is root's, 0755.
 */
async function makeIn(
  top: string,
  layers: string[],
  path: string,
  leaf: 'dir' | 'file' | 'whiteout' | { link: string },
): Promise<void> {
  for (const dir of ancestors(path)) {
    const hostDir = join(top, dir);
    if (await exists(hostDir)) continue;
    const image = await imageDir(layers, dir);
    // A directory of ours over an image's symlink would replace it; a whiteout must hide only its path.
    if (leaf === 'whiteout' && !image && (await imageHas(layers, dir))) {
      throw new InvalidSandboxSpecError(`cannot hide ${path}: ${dir} is not a directory in the image`);
    }
    await mkdir(hostDir);
    await chown(hostDir, image?.uid ?? 0, image?.gid ?? 0);
    await chmod(hostDir, image ? image.mode & 0o7777 : 0o755);
  }
  const target = join(top, path);
  if (await exists(target)) return;
  if (leaf === 'dir') await mkdir(target, { mode: 0o755 });
  else if (leaf === 'file') await writeFile(target, '', { mode: 0o444 });
  // A 0/0 character device is overlayfs' whiteout: the image's entry below reads as absent.
  else if (leaf === 'whiteout') await execFileAsync('mknod', [target, 'c', '0', '0']);
  else await symlink(leaf.link, target);
}

/** Whether something is mounted at `dir` (it sits on another device than its parent). */
async function isMountPoint(dir: string): Promise<boolean> {
  const [self, parent] = await Promise.all([stat(dir).catch(() => undefined), stat(dirname(dir))]);
  return self !== undefined && self.dev !== parent.dev;
}

export class SharedRoots {
  /** Roots mounted or being mounted by this process, by key. */
  private readonly mounted = new Map<string, Promise<string>>();

  constructor(
    /** Where the top layers are kept. */
    private readonly layersDir: string,
    /** Where the roots are mounted; the sandbox user must be able to reach it. */
    private readonly mountsDir: string,
    private readonly mounter: Mounter,
  ) {}

  /** The mounted root of `plan`, made on first use (another process may have mounted it). */
  root(plan: RootPlan): Promise<string> {
    const key = rootPlanKey(plan);
    let pending = this.mounted.get(key);
    if (!pending) {
      pending = this.mount(key, plan);
      pending.catch(() => this.mounted.delete(key));
      this.mounted.set(key, pending);
    }
    return pending;
  }

  /** Unmounts every root and removes their layers; only once no sandbox uses them. */
  async release(): Promise<void> {
    this.mounted.clear();
    for (const key of await readdir(this.mountsDir).catch(() => [])) {
      // A root two processes raced to mount is mounted twice.
      while (await this.mounter.unmount(join(this.mountsDir, key)));
    }
    await rm(this.mountsDir, { recursive: true, force: true });
    await rm(this.layersDir, { recursive: true, force: true });
  }

  private async mount(key: string, plan: RootPlan): Promise<string> {
    const target = join(this.mountsDir, key);
    await mkdir(target, { recursive: true, mode: 0o755 });
    await chmod(this.mountsDir, 0o711);
    if (await isMountPoint(target)) return target;
    const top = await this.topLayer(key, plan);
    const lower = [top, ...[...plan.imageLayers].reverse()].join(':');
    await this.mounter.mount('overlay', 'sandbox-root', target, ['rdonly', 'nodev', 'nosuid'], `lowerdir=${lower}`);
    return target;
  }

  /** The plan's top layer, made under a scratch name and renamed into place (atomic). */
  private async topLayer(key: string, plan: RootPlan): Promise<string> {
    const dir = join(this.layersDir, key);
    if (await exists(dir)) return dir;
    await mkdir(this.layersDir, { recursive: true, mode: 0o700 });
    const scratch = `${dir}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      await mkdir(scratch);
      await chmod(scratch, 0o755);
      for (const point of plan.mountPoints) {
        await makeIn(scratch, plan.imageLayers, point.path, point.file ? 'file' : 'dir');
      }
      if (plan.link) await makeIn(scratch, plan.imageLayers, plan.link.path, { link: plan.link.target });
      for (const path of plan.whiteouts ?? []) await makeIn(scratch, plan.imageLayers, path, 'whiteout');
      await rename(scratch, dir).catch(async (err: NodeJS.ErrnoException) => {
        // Another process made the same layer first: use its copy.
        if (!(await exists(dir))) throw err;
      });
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
    return dir;
  }
}
