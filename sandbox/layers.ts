/**
 * A sandbox's filesystem on the host, mounted once at create and kept until destroy (each exec is
 * a fresh runner over it). The mount points the runner binds from live in a mount directory the
 * unprivileged sandbox user can reach (whatever the permissions on the way to the provider's root
 * directory):
 *
 *   <mountDir>/rw/            a tmpfs of `diskBytes`: every byte the sandbox can write lands here
 *   <mountDir>/rw/upper/      the workspace overlay's upper layer (what the agent changed)
 *   <mountDir>/rw/work/       its overlayfs work directory
 *   <mountDir>/rw/root-upper/ the root overlay's upper layer: the mount points and the workspace
 *                             link, made before the overlay is mounted
 *   <mountDir>/rw/root-work/  its overlayfs work directory
 *   <mountDir>/rw/tmp/        the sandbox's /tmp (and HOME)
 *   <mountDir>/workspace/     the overlay: prepared workspace layer + upper, bound at /workspace
 *   <mountDir>/root/          the overlay: image layers + root-upper, bound read-only at /
 *
 * So the image and the prepared workspace are shared read-only by every sandbox, and every
 * writable layer shares one size cap.
 */
import { execFile } from 'node:child_process';
import { chmod, chown, lstat, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ProviderUnavailableError } from './provider.js';
import { ancestors } from './mounts.js';
import type { SandboxUser } from './runner.js';

const execFileAsync = promisify(execFile);

export interface LayerPaths {
  rw: string;
  upper: string;
  work: string;
  rootUpper: string;
  rootWork: string;
  tmp: string;
  workspace: string;
  root: string;
}

export function layerPaths(mountDir: string): LayerPaths {
  const rw = join(mountDir, 'rw');
  return {
    rw,
    upper: join(rw, 'upper'),
    work: join(rw, 'work'),
    rootUpper: join(rw, 'root-upper'),
    rootWork: join(rw, 'root-work'),
    tmp: join(rw, 'tmp'),
    workspace: join(mountDir, 'workspace'),
    root: join(mountDir, 'root'),
  };
}

/** What the sandbox's root must hold on top of its image. */
export interface RootPlan {
  /** The image's layer directories, lowest first. */
  imageLayers: string[];
  /** Absolute sandbox paths to be mount points: directories, or files for a bound file. */
  mountPoints: { path: string; file: boolean }[];
  /** A sandbox path to become a symlink to `target` (replacing what the image has there). */
  link?: { path: string; target: string };
}

async function run(argv: string[]): Promise<void> {
  try {
    await execFileAsync(argv[0]!, argv.slice(1));
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr?.trim();
    throw new ProviderUnavailableError(
      `${argv.join(' ')} failed: ${stderr || (err as Error).message}`,
      { cause: err },
    );
  }
}

/** The topmost image layer's entry at `path`, if it is a directory (a whiteout hides it). */
async function imageDir(layers: string[], path: string): Promise<{ mode: number; uid: number; gid: number } | undefined> {
  for (const layer of [...layers].reverse()) {
    const s = await lstat(join(layer, path)).catch(() => undefined);
    if (s) return s.isDirectory() ? s : undefined;
  }
  return undefined;
}

/**
 * Makes `path` (and its parents) in the root's upper layer, which is fresh and ours: no symlink
 * of the image is followed on the host. A parent the image has as a directory keeps its owner
 * and mode (the upper copy is what the merged root shows); a new one is root's, 0755.
 */
async function makeInUpper(upper: string, layers: string[], path: string, leaf: 'dir' | 'file' | { link: string }): Promise<void> {
  for (const dir of ancestors(path)) {
    const hostDir = join(upper, dir);
    if (await lstat(hostDir).then(() => true, () => false)) continue;
    const image = await imageDir(layers, dir);
    await mkdir(hostDir, { mode: 0o755 });
    if (image) {
      await chown(hostDir, image.uid, image.gid);
      await chmod(hostDir, image.mode & 0o7777);
    } else {
      await chmod(hostDir, 0o755);
    }
  }
  const target = join(upper, path);
  if (await lstat(target).then(() => true, () => false)) return;
  if (leaf === 'dir') await mkdir(target, { mode: 0o755 });
  else if (leaf === 'file') await writeFile(target, '', { mode: 0o444 });
  else await symlink(leaf.link, target);
}

/**
 * Mounts the size-capped tmpfs, the workspace overlay over `workspaceLower` (a prepared layer,
 * read-only) and the root overlay over the image.
 */
export async function mountLayers(
  p: LayerPaths,
  options: { diskBytes: number; user: SandboxUser; workspaceLower: string; root: RootPlan },
): Promise<void> {
  const { user, root } = options;
  await mkdir(p.rw, { recursive: true });
  await mkdir(p.workspace);
  await mkdir(p.root);
  await run([
    'mount',
    '-t',
    'tmpfs',
    '-o',
    `size=${options.diskBytes},mode=0711,nodev,nosuid`,
    'sandbox-rw',
    p.rw,
  ]);
  await Promise.all([p.upper, p.work, p.tmp, p.rootUpper, p.rootWork].map((d) => mkdir(d)));
  await chown(p.tmp, user.uid, user.gid);
  await chmod(p.tmp, 0o700);
  // The overlay's root is upper's root: the sandbox user must own it to write there.
  await chown(p.upper, user.uid, user.gid);
  await chmod(p.rootUpper, 0o755);
  for (const point of root.mountPoints) {
    await makeInUpper(p.rootUpper, root.imageLayers, point.path, point.file ? 'file' : 'dir');
  }
  // The spec check keeps every mount point off the link's path: nothing is made through it.
  if (root.link) await makeInUpper(p.rootUpper, root.imageLayers, root.link.path, { link: root.link.target });
  await run([
    'mount',
    '-t',
    'overlay',
    '-o',
    `lowerdir=${options.workspaceLower},upperdir=${p.upper},workdir=${p.work},nodev,nosuid`,
    'sandbox-workspace',
    p.workspace,
  ]);
  await run([
    'mount',
    '-t',
    'overlay',
    '-o',
    `lowerdir=${[...root.imageLayers].reverse().join(':')},upperdir=${p.rootUpper},workdir=${p.rootWork},nodev,nosuid`,
    'sandbox-root',
    p.root,
  ]);
}

/** Mount points under `dir`, deepest first, from /proc/self/mountinfo. */
export async function mountsUnder(dir: string): Promise<string[]> {
  const info = await readFile('/proc/self/mountinfo', 'utf8');
  const points = info
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => !!p)
    .map((p) => p.replace(/\\(\d{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8))))
    .filter((p) => p === dir || p.startsWith(`${dir}/`));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

/** Unmounts everything under `dir` (lazily if still busy); mounts already gone are fine. */
export async function unmountLayers(dir: string): Promise<void> {
  for (const point of await mountsUnder(dir)) {
    try {
      await execFileAsync('umount', [point]);
    } catch {
      await run(['umount', '-l', point]);
    }
  }
}
