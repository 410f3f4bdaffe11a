/**
 * The content-addressed layer cache: `<cacheDir>/layers/<algo>-<hex>/` holds the unpacked layer
 * whose blob has that digest, whichever image it came with. A layer is unpacked into a temporary
 * directory on the same file system and renamed into place, so a directory that exists is
 * complete; concurrent requests in this process share one unpack, and when two processes race
 * the loser of the rename discards its copy.
 */
import { chmod, mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { blobMismatch, blobPath, layerCompression, type Descriptor } from './oci.js';
import { ScratchSpace } from './scratch.js';
import { LayerUnpackError, unpackLayer } from './unpack.js';
import { ImageError } from './types.js';

export class LayerCache {
  private readonly unpacking = new Map<string, Promise<string>>();
  readonly layersDir: string;
  readonly scratch: ScratchSpace;

  constructor(
    cacheDir: string,
    private readonly log: ((line: string) => void) | undefined,
  ) {
    this.layersDir = join(cacheDir, 'layers');
    this.scratch = new ScratchSpace(join(cacheDir, 'tmp'));
  }

  /** The directory of the layer with `digest` (whether it is unpacked or not). */
  dirOf(digest: string): string {
    return join(this.layersDir, digest.replace(':', '-'));
  }

  async has(digest: string): Promise<boolean> {
    return stat(this.dirOf(digest)).then(
      (s) => s.isDirectory(),
      () => false,
    );
  }

  /** The unpacked directory of layer `d`, unpacking its blob from `layout` when not cached yet. */
  ensure(layout: string, d: Descriptor, reference: string): Promise<string> {
    let pending = this.unpacking.get(d.digest);
    if (pending === undefined) {
      pending = this.unpackOnce(layout, d, reference).finally(() =>
        this.unpacking.delete(d.digest),
      );
      this.unpacking.set(d.digest, pending);
    }
    return pending;
  }

  private async unpackOnce(layout: string, d: Descriptor, reference: string): Promise<string> {
    const target = this.dirOf(d.digest);
    if (await this.has(d.digest)) return target;
    const compression = layerCompression(d.mediaType);
    if (compression === undefined) {
      throw new ImageError(
        `image ${reference}: layer ${d.digest} has unsupported media type ${d.mediaType}`,
        false,
      );
    }
    const mismatch = await blobMismatch(layout, d);
    if (mismatch !== undefined) throw new ImageError(`image ${reference}: ${mismatch}`, false);
    await mkdir(this.layersDir, { recursive: true });
    const started = Date.now();
    const scratch = await this.scratch.make('layer');
    try {
      // mkdtemp makes 0700; a layer without a `./` entry must still be traversable as a root.
      await chmod(scratch, 0o755);
      await unpackLayer(blobPath(layout, d.digest), compression, scratch);
      await this.place(scratch, target);
    } catch (err) {
      if (err instanceof LayerUnpackError) {
        throw new ImageError(`image ${reference}: layer ${d.digest}: ${err.message}`, false, {
          cause: err,
        });
      }
      throw err;
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
    const mb = (d.size / 1e6).toFixed(1);
    this.log?.(
      `image ${reference}: unpacked layer ${d.digest} (${mb} MB, ${Date.now() - started} ms)`,
    );
    return target;
  }

  /** Renames `scratch` to `target`; when another process got there first its copy stands. */
  private async place(scratch: string, target: string): Promise<void> {
    try {
      await rename(scratch, target);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
    }
  }
}
