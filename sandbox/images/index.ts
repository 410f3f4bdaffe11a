/**
 * The image store (sandbox/images/): where every sandbox's root file system comes from.
 *
 *   const store = new LocalImageStore({ cacheDir: '/var/lib/rollout/images' });
 *   const root = await store.resolve('swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest');
 *   // root.layers: unpacked layer directories, lowest first (overlayfs lowerdirs, reversed)
 *
 * Several stores and processes may share one cache directory.
 */
export { BASE_IMAGE, ImageError, type ImageRoot, type ImageStore } from './types.js';
export { baseImageRoot, DEFAULT_BASE_IMAGE_DIR } from './base.js';
export { LocalImageStore, type LocalImageStoreOptions } from './store.js';
export { parseReference, type ImageReference } from './reference.js';
