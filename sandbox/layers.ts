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
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { HostOp, Mounter, Tolerated } from './mounter.js';
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

/** Makes the mount directory and mounts the size-capped tmpfs and the workspace overlay over `workspaceLower` (read-only): one batch. */
export async function mountLayers(
  mounter: Mounter,
  mountDir: string,
  options: { diskBytes: number; user: SandboxUser; workspaceLower: string },
): Promise<void> {
  const p = layerPaths(mountDir);
  const { uid, gid } = options.user;
  await mounter.run([
    { op: 'mkdir', path: mountDir, mode: 0o755 },
    { op: 'mkdir', path: p.rw, mode: 0o711 },
    { op: 'mkdir', path: p.workspace, mode: 0o755 },
    {
      op: 'mount',
      fstype: 'tmpfs',
      source: 'sandbox-rw',
      target: p.rw,
      flags: ['nodev', 'nosuid'],
      data: `size=${options.diskBytes},mode=0711`,
    },
    // The overlay's root is upper's root: the sandbox user must own it to write there.
    { op: 'mkdir', path: p.upper, mode: 0o755, owner: { uid, gid } },
    { op: 'mkdir', path: p.work, mode: 0o700 },
    { op: 'mkdir', path: p.tmp, mode: 0o700, owner: { uid, gid } },
    {
      op: 'mount',
      fstype: 'overlay',
      source: 'sandbox-workspace',
      target: p.workspace,
      flags: ['nodev', 'nosuid'],
      data: `lowerdir=${options.workspaceLower},upperdir=${p.upper},workdir=${p.work}`,
    },
  ]);
}

/**
 * The operations that unmount the sandbox's own mounts and remove the mount directory; what is
 * already gone is fine. They fail (ENOTEMPTY, EBUSY) on anything of another layout.
 */
export function removeLayersOps(mountDir: string): HostOp[] {
  const p = layerPaths(mountDir);
  const gone: Tolerated[] = ['ENOENT', 'EINVAL'];
  return [
    { op: 'umount', target: p.workspace, tolerate: gone },
    { op: 'umount', target: p.rw, tolerate: gone },
    { op: 'rmdir', path: p.rw, tolerate: ['ENOENT'] },
    { op: 'rmdir', path: p.workspace, tolerate: ['ENOENT'] },
    { op: 'rmdir', path: mountDir, tolerate: ['ENOENT'] },
  ];
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
