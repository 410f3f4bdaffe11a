/**
 * The image store that knows the base image alone: what the provider uses until a store that
 * pulls OCI images is given to it (`BubblewrapProviderOptions.images`).
 */
import { baseImageRoot } from './base.js';
import { BASE_IMAGE, ImageError, type ImageRoot, type ImageStore } from './types.js';

export class BaseImageOnlyStore implements ImageStore {
  private base: Promise<ImageRoot> | undefined;

  /** `baseDir`: where the base image is built. Default `DEFAULT_BASE_IMAGE_DIR`. */
  constructor(private readonly baseDir?: string) {}

  resolve(reference: string): Promise<ImageRoot> {
    if (reference !== BASE_IMAGE) {
      return Promise.reject(
        new ImageError(`image ${reference}: this store holds only the base image`, false),
      );
    }
    // A failed look-up (image not built yet) is not remembered: building it fixes the next one.
    this.base ??= baseImageRoot(this.baseDir).catch((err: unknown) => {
      this.base = undefined;
      throw err;
    });
    return this.base;
  }
}
