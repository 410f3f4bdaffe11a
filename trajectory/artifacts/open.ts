import { DirectoryArtifacts } from './directory.js';
import { S3Artifacts } from './s3.js';
import type { S3ArtifactsOptions } from './s3-options.js';
import { ArtifactStoreError, type ArtifactStore } from './types.js';

/** Options of {@link openArtifactStore}, per kind of store; the ones that do not match the URI are ignored. */
export interface OpenArtifactStoreOptions {
  /**
   * Options of an `s3://` store.
   *
   * @default `{}`: every field as {@link S3ArtifactsOptions} says, mostly from `AWS_*` variables
   */
  s3?: S3ArtifactsOptions;
}

/**
 * The artifact store a URI names:
 * - `s3://bucket[/prefix]`: {@link S3Artifacts}, configured by `options.s3` and the `AWS_*` environment;
 * - `file:///path` or a plain directory path (relative to the working directory): {@link DirectoryArtifacts}.
 *
 * Throws `ArtifactStoreError`, naming the URI, for another scheme or invalid options.
 */
export function openArtifactStore(uri: string, options: OpenArtifactStoreOptions = {}): ArtifactStore {
  if (uri.startsWith('s3://')) return new S3Artifacts(uri, options.s3);
  if (uri.startsWith('file:') || !/^[a-z][a-z0-9+.-]*:/i.test(uri)) return new DirectoryArtifacts(uri);
  throw new ArtifactStoreError(`unsupported artifact store URI ${uri}: expected s3://bucket/prefix, file:///path or a directory path`);
}
