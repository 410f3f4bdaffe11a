/** The image store (sandbox/images/): where every sandbox's root file system comes from. */
export { BASE_IMAGE, ImageError, type ImageRoot, type ImageStore } from './types.js';
export { baseImageRoot, DEFAULT_BASE_IMAGE_DIR } from './base.js';
export { LocalImageStore, type LocalImageStoreOptions } from './store.js';
export { parseReference, type ImageReference } from './reference.js';
