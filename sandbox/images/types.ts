/**
 * Images: where a sandbox's root file system comes from. Never the host's root: the base image
 * `scripts/build-base-image.sh` builds, or a task's own OCI image, unpacked once per layer into a
 * content-addressed cache on the worker host and stacked read-only (overlayfs lowerdirs) under
 * each sandbox's writable layer, so every sandbox of an image shares one copy.
 */

/** The reference a sandbox asks for when its task names no image: the base image. */
export const BASE_IMAGE = 'base';

/** An image ready to be a sandbox's root, on this host. */
export interface ImageRoot {
  /** Content address: the manifest digest (`sha256:…`), or the base image's build id. */
  digest: string;
  /** Unpacked layer directories on the host, lowest first (overlayfs takes them topmost first). */
  layers: string[];
  /** The image config's environment (`Env`), as a map. Empty when it sets none. */
  env: Record<string, string>;
  /** The image config's `WorkingDir`, when it sets one. */
  workingDir?: string;
}

export interface ImageStore {
  /**
   * The image `reference` names, pulled and unpacked on first use (concurrent callers share one
   * pull); `BASE_IMAGE` is the base image. Throws `ImageError`.
   */
  resolve(reference: string, options?: { signal?: AbortSignal }): Promise<ImageRoot>;
}

/** An image cannot be had: malformed reference, registry unreachable, corrupt layer. */
export class ImageError extends Error {
  override name = 'ImageError';
  constructor(
    message: string,
    /** Whether trying again can help (a registry down) or not (a reference that does not exist). */
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
