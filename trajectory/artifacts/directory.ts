import { randomUUID } from 'node:crypto';
import type { Dirent } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { checkKey, checkPrefix, isUri, sha256Hex } from './keys.js';
import { ArtifactNotFoundError, ArtifactStoreError, type ArtifactStore, type StoredArtifact } from './types.js';

/**
 * Artifacts as files under a root directory: the default store, and the one to use on a shared
 * file system (NFS, Lustre, a cluster volume) that every host mounts at the same path. Key
 * `a/b.arrow` is the file `<root>/a/b.arrow`; its URI is that file's `file://` URL. `delete`
 * leaves emptied folders behind: removing them would race with a `put` into the same folder.
 */
export class DirectoryArtifacts implements ArtifactStore {
  readonly uri: string;
  /** Absolute path of the root directory. */
  readonly root: string;

  /** @param root a directory path (relative to the working directory) or a `file://` URI; created on the first `put`. */
  constructor(root: string) {
    if (root === '') throw new ArtifactStoreError('artifact store directory is empty');
    this.root = path.resolve(root.startsWith('file:') ? localPath(root) : root);
    this.uri = pathToFileURL(this.root + path.sep).href;
  }

  async put(key: string, bytes: Uint8Array): Promise<StoredArtifact> {
    const file = this.pathOf(checkKey(key, this.uri));
    await mkdir(path.dirname(file), { recursive: true });
    // A dot name beside the target: on the same file system, so the rename is atomic, and never
    // listed, since no key segment starts with a dot.
    const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${randomUUID()}.tmp`);
    const handle = await open(tmp, 'wx');
    try {
      await handle.writeFile(bytes);
      // Flushed before the rename, so a crash cannot leave a complete name over partial content.
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await rename(tmp, file);
    } catch (error) {
      await unlink(tmp).catch(() => undefined);
      throw error;
    }
    return { uri: pathToFileURL(file).href, bytes: bytes.byteLength, sha256: sha256Hex(bytes) };
  }

  async get(keyOrUri: string): Promise<Uint8Array> {
    const file = this.resolve(keyOrUri);
    try {
      const content = await readFile(file);
      return new Uint8Array(content.buffer, content.byteOffset, content.byteLength);
    } catch (error) {
      if (isMissing(error)) throw new ArtifactNotFoundError(pathToFileURL(file).href);
      throw error;
    }
  }

  async exists(keyOrUri: string): Promise<boolean> {
    try {
      return (await stat(this.resolve(keyOrUri))).isFile();
    } catch (error) {
      if (isMissing(error)) return false;
      throw error;
    }
  }

  async delete(keyOrUri: string): Promise<void> {
    try {
      await unlink(this.resolve(keyOrUri));
    } catch (error) {
      if (!isMissing(error)) throw error;
    }
  }

  async list(prefix = ''): Promise<string[]> {
    checkPrefix(prefix, this.uri);
    // Walk only the directory the prefix names; the rest of its last segment filters names.
    const dir = prefix.slice(0, prefix.lastIndexOf('/') + 1);
    const keys: string[] = [];
    await this.walk(dir, keys);
    return keys.filter((k) => k.startsWith(prefix)).sort();
  }

  async close(): Promise<void> {}

  private async walk(dir: string, keys: string[]): Promise<void> {
    let entries: Dirent[];
    try {
      entries = await readdir(this.pathOf(dir), { withFileTypes: true });
    } catch (error) {
      if (isMissing(error)) return;
      throw error;
    }
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      const key = dir + entry.name;
      if (entry.isDirectory()) await this.walk(`${key}/`, keys);
      else if (entry.isFile()) keys.push(key);
    }
  }

  private pathOf(key: string): string {
    return path.join(this.root, ...key.split('/'));
  }

  /** The file of a key, or of a `file://` URI inside the root. */
  private resolve(keyOrUri: string): string {
    if (!isUri(keyOrUri)) return this.pathOf(checkKey(keyOrUri, this.uri));
    let file: string;
    try {
      file = fileURLToPath(keyOrUri);
    } catch {
      throw new ArtifactStoreError(`${keyOrUri} is not a file:// URI of ${this.uri}`);
    }
    const relative = path.relative(this.root, file);
    if (relative === '' || relative.startsWith('..') || path.isAbsolute(relative)) {
      throw new ArtifactStoreError(`${keyOrUri} is outside ${this.uri}`);
    }
    return this.pathOf(checkKey(relative.split(path.sep).join('/'), this.uri));
  }
}

function localPath(uri: string): string {
  try {
    return fileURLToPath(uri);
  } catch (error) {
    throw new ArtifactStoreError(`invalid artifact store URI ${uri}: ${(error as Error).message}`);
  }
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR';
}
