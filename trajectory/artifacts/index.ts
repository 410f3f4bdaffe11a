/**
 * The artifact store: where trajectory group files and exports live so that any host can read
 * them. Open one by URI with {@link openArtifactStore}; a directory (`file://` or a path, the
 * default, for one machine or a shared file system) or S3-compatible object storage (`s3://`).
 */
export { openArtifactStore, type OpenArtifactStoreOptions } from './open.js';
export { DirectoryArtifacts } from './directory.js';
export { S3Artifacts } from './s3.js';
export type { S3ArtifactsOptions } from './s3-options.js';
export { ArtifactNotFoundError, ArtifactStoreError, type ArtifactStore, type StoredArtifact } from './types.js';
