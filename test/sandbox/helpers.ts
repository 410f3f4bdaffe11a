import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { LocalSandboxProvider } from '../../sandbox/local-provider.js';
import { baseImageRoot } from '../../sandbox/images/base.js';
import { BASE_IMAGE, ImageError, type ImageRoot, type ImageStore } from '../../sandbox/images/types.js';

/**
 * Host temp dirs live under /var/tmp, not /tmp: every sandbox has its own /tmp, so a fixture under
 * the host's /tmp would be invisible inside for the wrong reason and prove nothing.
 */
export async function tempDir(prefix: string): Promise<string> {
  return mkdtemp(join('/var/tmp', `agent-rollout-${prefix}-`));
}

export async function removeDirs(dirs: string[]): Promise<void> {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
}

export async function writeTree(root: string, files: Record<string, string>): Promise<void> {
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), content);
  }
}

export async function readTree(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    if (path.includes('/.git/')) continue;
    out[path.slice(root.length + 1)] = await readFile(path, 'utf8');
  }
  return out;
}

export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@t',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@t',
    },
  });
}

/** Host processes whose command line contains `needle` (zombies have none, so they do not count). */
export async function hostProcessesMatching(needle: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    const text = cmdline.replace(/\0$/, '').split('\0').join(' ');
    if (text.includes(needle)) found.push(`${pid}: ${text}`);
  }
  return found;
}

/** A git diff that creates `path` with `content`. */
export function newFileDiff(path: string, content: string): string {
  const lines = content.endsWith('\n') ? content.slice(0, -1).split('\n') : content.split('\n');
  return [
    `diff --git a/${path} b/${path}`,
    'new file mode 100644',
    '--- /dev/null',
    `+++ b/${path}`,
    `@@ -0,0 +1,${lines.length} @@`,
    ...lines.map((l) => `+${l}`),
    '',
  ].join('\n');
}

/**
 * Removes every sandbox of `provider` (live, expired, half-made: their mounts and cgroups too) and
 * its now empty host directories, so a test leaves nothing on the host.
 */
export async function removeAllSandboxes(provider: LocalSandboxProvider): Promise<void> {
  await provider.sweepExpired(Number.MAX_SAFE_INTEGER);
  await provider.release();
}

/**
 * An image store over images already unpacked on this host (layer directories, lowest first),
 * by reference; the base image as `BASE_IMAGE`. For tests that need an image of their own.
 */
export class UnpackedImageStore implements ImageStore {
  constructor(private readonly images: Record<string, ImageRoot>) {}

  async resolve(reference: string): Promise<ImageRoot> {
    const image = this.images[reference];
    if (image) return image;
    if (reference === BASE_IMAGE) return baseImageRoot();
    throw new ImageError(`no image ${reference} in this store`, false);
  }
}
