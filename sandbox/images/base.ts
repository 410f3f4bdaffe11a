/**
 * The base image: the Debian root file system `scripts/build-base-image.sh` builds into
 * `.tools/images/base/rootfs`, one layer, its content key in `.tools/images/base/id`.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ImageError, type ImageRoot } from './types.js';

/** `.tools/images/base` of this checkout. */
export const DEFAULT_BASE_IMAGE_DIR = fileURLToPath(
  new URL('../../.tools/images/base', import.meta.url),
);

/** What the base image's processes get on PATH (Node 20 is in /usr/local/bin). */
const BASE_ENV = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' };

/** The base image in `dir` (default `DEFAULT_BASE_IMAGE_DIR`), or ImageError when it is not built. */
export async function baseImageRoot(dir: string = DEFAULT_BASE_IMAGE_DIR): Promise<ImageRoot> {
  const rootfs = join(dir, 'rootfs');
  const id = await readFile(join(dir, 'id'), 'utf8').catch(() => undefined);
  const built = await stat(join(rootfs, 'usr')).then(
    (s) => s.isDirectory(),
    () => false,
  );
  if (id === undefined || !built) {
    throw new ImageError(
      `the base image is not built in ${dir}: run scripts/build-base-image.sh (scripts/setup.sh does)`,
      false,
    );
  }
  return { digest: id.trim(), layers: [rootfs], env: { ...BASE_ENV } };
}
