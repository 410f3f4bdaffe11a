/** What {@link ArtifactStore.put} wrote. */
export interface StoredArtifact {
  /** Where the object lives, readable from any host that shares the store: `file:///…` or `s3://bucket/key`. */
  uri: string;
  /** Its size in bytes. */
  bytes: number;
  /** Hex SHA-256 of its content, computed from the bytes handed to `put`. */
  sha256: string;
}

/**
 * Immutable objects (trajectory group files, exports) under string keys, in a directory or in
 * S3-compatible object storage; open one with `openArtifactStore`.
 *
 * A key is a relative, `/`-separated path such as `batch-1/groups/g-0.arrow` (see `checkKey`).
 * Wherever a key is taken, the URI that `put` returned for it is taken too, so a manifest can
 * carry URIs alone.
 */
export interface ArtifactStore {
  /** URI of the store's root, ending in `/`: `file:///data/exports/` or `s3://bucket/prefix/`. */
  readonly uri: string;
  /** Writes `bytes` under `key`, replacing what was there; readers see the old or the new object whole, never a part. */
  put(key: string, bytes: Uint8Array): Promise<StoredArtifact>;
  /** The object's content. Throws `ArtifactNotFoundError` when there is none. */
  get(keyOrUri: string): Promise<Uint8Array>;
  /** Whether the object exists. */
  exists(keyOrUri: string): Promise<boolean>;
  /** Removes the object; removing one that does not exist is not an error. */
  delete(keyOrUri: string): Promise<void>;
  /** Keys of all objects whose key starts with `prefix` (default: all), sorted by code unit. */
  list(prefix?: string): Promise<string[]>;
  /** Releases connections; the store is not used afterwards. */
  close(): Promise<void>;
}

/** A bad store URI, bad options, or a key or URI outside the store. */
export class ArtifactStoreError extends Error {
  override name = 'ArtifactStoreError';
}

/** `get` of an object that does not exist. */
export class ArtifactNotFoundError extends ArtifactStoreError {
  override name = 'ArtifactNotFoundError';
  constructor(readonly uri: string) {
    super(`artifact ${uri} does not exist`);
  }
}
