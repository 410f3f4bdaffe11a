/**
 * Unpacks one layer tar into a directory so that layer directories stacked with overlayfs give
 * the image's file system: GNU tar extracts (it refuses absolute and `..` member names, hard
 * links out of the directory and writes through symlinks; a member it refuses fails the layer),
 * device nodes are dropped (a sandbox gets its /dev from its provider, and a device node in an
 * image would open a host device), and OCI whiteouts become overlayfs ones.
 */
import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type { Compression } from './oci.js';

const execFileAsync = promisify(execFile);

/** A layer tar that cannot be unpacked (tar refused a member, a marker is malformed, a tool is missing). */
export class LayerUnpackError extends Error {
  override name = 'LayerUnpackError';
}

const OPAQUE_MARKER = '.wh..wh..opq';
const WHITEOUT_PREFIX = '.wh.';

async function run(argv: string[], what: string): Promise<string> {
  try {
    const { stdout } = await execFileAsync(argv[0]!, argv.slice(1), {
      maxBuffer: 256 * 1024 * 1024,
    });
    return stdout;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new LayerUnpackError(`${what}: ${argv[0]} is not installed`);
    }
    const stderr = String((err as { stderr?: string }).stderr ?? '').trim();
    // The first refusals say what is wrong; tar's warnings and summary line do not.
    const lines = stderr.split('\n').filter((l) => l && !/Removing leading|Exiting with/.test(l));
    throw new LayerUnpackError(
      `${what}: ${lines.slice(0, 3).join('; ') || (err as Error).message}`,
    );
  }
}

async function hasCommand(name: string): Promise<boolean> {
  try {
    await execFileAsync('sh', ['-c', `command -v ${name}`]);
    return true;
  } catch {
    return false;
  }
}

/** Extracts `tarFile` (compressed as `compression`) into the existing directory `dir`. */
export async function unpackLayer(
  tarFile: string,
  compression: Compression,
  dir: string,
): Promise<void> {
  if (compression === 'zstd' && !(await hasCommand('zstd'))) {
    throw new LayerUnpackError(
      'the layer is zstd-compressed and zstd is not installed (apt-get install zstd)',
    );
  }
  const decompress = { none: [], gzip: ['--gzip'], zstd: ['--zstd'] }[compression];
  // Ownership as recorded, by number: the image's users, not this host's names. No xattrs: a
  // layer's trusted.overlay.* attributes would steer overlayfs.
  await run(
    [
      'tar',
      '--extract',
      ...decompress,
      '--file',
      tarFile,
      '--directory',
      dir,
      '--numeric-owner',
      '--same-owner',
      '--same-permissions',
    ],
    'tar refused the layer',
  );
  await run(
    ['find', dir, '(', '-type', 'b', '-o', '-type', 'c', ')', '-delete'],
    'dropping device nodes',
  );
  await convertWhiteouts(dir);
}

/** Turns `.wh.<name>` markers into 0/0 character devices and `.wh..wh..opq` into the opaque xattr. */
async function convertWhiteouts(dir: string): Promise<void> {
  const found = await run(
    ['find', dir, '-name', `${WHITEOUT_PREFIX}*`, '-prune', '-print0'],
    'finding whiteouts',
  );
  for (const marker of found.split('\0').filter(Boolean)) {
    const parent = dirname(marker);
    const name = basename(marker);
    await rm(marker, { recursive: true, force: true });
    if (name === OPAQUE_MARKER) {
      await run(
        ['setfattr', '-h', '-n', 'trusted.overlay.opaque', '-v', 'y', parent],
        'marking an opaque directory',
      );
      continue;
    }
    const hidden = name.slice(WHITEOUT_PREFIX.length);
    if (hidden === '' || hidden === '.' || hidden === '..' || hidden.startsWith(WHITEOUT_PREFIX)) {
      throw new LayerUnpackError(`malformed whiteout ${marker.slice(dir.length)}`);
    }
    // A same-layer entry under a whiteout's name has no meaning in OCI; the whiteout wins.
    await rm(join(parent, hidden), { recursive: true, force: true });
    await run(['mknod', join(parent, hidden), 'c', '0', '0'], 'writing a whiteout');
  }
}
