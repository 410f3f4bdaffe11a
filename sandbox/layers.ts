/**
 * A sandbox's filesystem on the host, mounted once at create and kept until destroy (each exec is
 * a fresh bwrap over it). The prepared copy stays with the sandbox's record; the mount points the
 * sandbox's bwrap binds from live in a mount directory the unprivileged sandbox user can reach
 * (whatever the permissions on the way to the provider's root directory):
 *
 *   <dir>/base/            the prepared workspace (copy + fresh git repository), the overlay's
 *                          read-only lower layer
 *   <mountDir>/rw/         a tmpfs of `diskBytes`: every byte the sandbox can write lands here
 *   <mountDir>/rw/upper/   the overlay's upper layer (what the agent changed)
 *   <mountDir>/rw/work/    overlayfs' work directory
 *   <mountDir>/rw/tmp/     the sandbox's /tmp (and HOME)
 *   <mountDir>/rw/dirs/N/  the Nth of the spec's `writableDirs`
 *   <mountDir>/workspace/  the overlay: base + upper, bound at /workspace
 *
 * So the workspace is copy-on-write and every writable layer shares one size cap.
 */
import { execFile } from 'node:child_process';
import { chmod, chown, mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ProviderUnavailableError } from './provider.js';
import type { SandboxUser } from './mounts.js';

const execFileAsync = promisify(execFile);

export interface LayerPaths {
  base: string;
  rw: string;
  upper: string;
  work: string;
  tmp: string;
  workspace: string;
}

export function layerPaths(dir: string, mountDir: string): LayerPaths {
  const rw = join(mountDir, 'rw');
  return {
    base: join(dir, 'base'),
    rw,
    upper: join(rw, 'upper'),
    work: join(rw, 'work'),
    tmp: join(rw, 'tmp'),
    workspace: join(mountDir, 'workspace'),
  };
}

/** The host directory behind the sandbox's `index`th writable directory. */
export function writableDirHost(p: LayerPaths, index: number): string {
  return join(p.rw, 'dirs', String(index));
}

async function run(argv: string[]): Promise<void> {
  try {
    await execFileAsync(argv[0]!, argv.slice(1));
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr?.trim();
    throw new ProviderUnavailableError(
      `${argv.join(' ')} failed: ${stderr || (err as Error).message}`,
      {
        cause: err,
      },
    );
  }
}

/** Mounts the size-capped tmpfs and the overlay over an already prepared `base/`. */
export async function mountLayers(
  p: LayerPaths,
  diskBytes: number,
  user: SandboxUser,
): Promise<void> {
  await mkdir(p.rw, { recursive: true });
  await mkdir(p.workspace, { recursive: true });
  await run([
    'mount',
    '-t',
    'tmpfs',
    '-o',
    `size=${diskBytes},mode=0711,nodev,nosuid`,
    'sandbox-rw',
    p.rw,
  ]);
  await mkdir(p.upper);
  await mkdir(p.work);
  await mkdir(p.tmp);
  await chown(p.tmp, user.uid, user.gid);
  await chmod(p.tmp, 0o700);
  // The overlay's root is a copy of base's root: the sandbox user must own it to write there.
  await chown(p.upper, user.uid, user.gid);
  await run([
    'mount',
    '-t',
    'overlay',
    '-o',
    `lowerdir=${p.base},upperdir=${p.upper},workdir=${p.work},nodev,nosuid`,
    'sandbox-workspace',
    p.workspace,
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
