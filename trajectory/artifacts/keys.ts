import { createHash } from 'node:crypto';
import { ArtifactStoreError } from './types.js';

const MAX_KEY_LENGTH = 1024;

/**
 * Throws unless `key` is a key both stores accept alike: 1–1024 characters of `/`-separated
 * segments, none empty or starting with `.` (which rules out `..` escapes and leaves dot names
 * free for a directory store's temporary files), with no backslash or control character.
 */
export function checkKey(key: string, storeUri: string): string {
  const segments = key.split('/');
  const bad =
    key.length === 0 ||
    key.length > MAX_KEY_LENGTH ||
    /[\\\u0000-\u001f\u007f]/.test(key) ||
    segments.some((s) => s.length === 0 || s.startsWith('.'));
  if (bad) throw new ArtifactStoreError(`invalid artifact key ${JSON.stringify(key)} for ${storeUri}`);
  return key;
}

/**
 * Throws unless `prefix` may start a key: empty, or a key with an optional trailing `/`
 * (`batch-1/` lists a batch's objects, `batch-1/groups/g-` a name range).
 */
export function checkPrefix(prefix: string, storeUri: string): string {
  if (prefix !== '') checkKey(prefix.endsWith('/') ? prefix.slice(0, -1) : prefix, storeUri);
  return prefix;
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Whether a key or URI argument is a URI (keys have no scheme). */
export function isUri(keyOrUri: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(keyOrUri);
}
