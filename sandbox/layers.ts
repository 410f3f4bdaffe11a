/**
 * A sandbox's own filesystem on the host, mounted once at create and kept until destroy (each
 * exec is a fresh runner over it). The mount points the runner binds from live in a mount
 * directory the unprivileged sandbox user can reach (whatever the permissions on the way to the
 * provider's root directory):
 *
 *   <mountDir>/rw/         a tmpfs of `diskBytes`: every byte the sandbox can write lands here
 *   <mountDir>/rw/upper/   the workspace overlay's upper layer (what the agent changed)
 *   <mountDir>/rw/work/    its overlayfs work directory
 *   <mountDir>/rw/tmp/     the sandbox's /tmp (and HOME)
 *   <mountDir>/workspace/  the overlay: prepared workspace layer + upper, bound at /workspace
 *
 * So the prepared workspace is shared read-only, and every writable layer shares one size cap.
 * The root is shared too (`shared-roots.ts`).
 */
import { chmod, chown, mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Mounter } from './mounter.js';
import type { SandboxUser } from './runner.js';

export interface LayerPaths {
  rw: string;
  upper: string;
  work: string;
  tmp: string;
  workspace: string;
}

export function layerPaths(mountDir: string): LayerPaths {
  const rw = join(mountDir, 'rw');
  return {
    rw,
    upper: join(rw, 'upper'),
    work: join(rw, 'work'),
    tmp: join(rw, 'tmp'),
    workspace: join(mountDir, 'workspace'),
  };
}

/** Mounts the size-capped tmpfs and the workspace overlay over `workspaceLower` (read-only). */
export async function mountLayers(
  mounter: Mounter,
  p: LayerPaths,
  options: { diskBytes: number; user: SandboxUser; workspaceLower: string },
): Promise<void> {
  const { user } = options;
  await mkdir(p.rw, { recursive: true });
  await mkdir(p.workspace);
  await mounter.mount('tmpfs', 'sandbox-rw', p.rw, ['nodev', 'nosuid'], `size=${options.diskBytes},mode=0711`);
  await Promise.all([p.upper, p.work, p.tmp].map((d) => mkdir(d)));
  await chown(p.tmp, user.uid, user.gid);
  await chmod(p.tmp, 0o700);
  // The overlay's root is upper's root: the sandbox user must own it to write there.
  await chown(p.upper, user.uid, user.gid);
  await mounter.mount(
    'overlay',
    'sandbox-workspace',
    p.workspace,
    ['nodev', 'nosuid'],
    `lowerdir=${options.workspaceLower},upperdir=${p.upper},workdir=${p.work}`,
  );
}

/** Unmounts the sandbox's own mounts; ones already gone are fine. */
export async function unmountLayers(mounter: Mounter, p: LayerPaths): Promise<void> {
  await mounter.unmount(p.workspace);
  await mounter.unmount(p.rw);
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

/** Unmounts everything under `dir`, deepest first: debris of an unknown or older layout. */
export async function unmountAllUnder(mounter: Mounter, dir: string): Promise<void> {
  for (const point of await mountsUnder(dir)) while (await mounter.unmount(point));
}
