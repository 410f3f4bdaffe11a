import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { checkKey, checkPrefix, isUri, sha256Hex } from './keys.js';
import { resolveS3Options, type S3ArtifactsOptions } from './s3-options.js';
import { ArtifactNotFoundError, ArtifactStoreError, type ArtifactStore, type StoredArtifact } from './types.js';

/** S3 bucket names: 3–63 lower-case letters, digits, dots and hyphens. */
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/**
 * Artifacts as objects in an S3-compatible store (AWS S3, Ceph RGW, versitygw, …) under
 * `s3://bucket/prefix/`: key `a/b.arrow` is the object `prefix/a/b.arrow`, and its URI is
 * `s3://bucket/prefix/a/b.arrow`. The bucket must exist.
 */
export class S3Artifacts implements ArtifactStore {
  readonly uri: string;
  readonly bucket: string;
  /** Object-key prefix of the store: empty, or ending in `/`. */
  readonly prefix: string;
  private readonly client: S3Client;

  /** @param uri `s3://bucket` or `s3://bucket/prefix`. */
  constructor(uri: string, options: S3ArtifactsOptions = {}) {
    const match = /^s3:\/\/([^/]+)(?:\/(.*))?$/.exec(uri);
    const bucket = match?.[1];
    if (!match || !bucket || !BUCKET.test(bucket)) {
      throw new ArtifactStoreError(`invalid S3 store URI ${uri}: expected s3://<bucket>[/<prefix>]`);
    }
    const prefix = (match[2] ?? '').replace(/\/+$/, '');
    if (prefix !== '') checkKey(prefix, uri);
    this.bucket = bucket;
    this.prefix = prefix === '' ? '' : `${prefix}/`;
    this.uri = `s3://${bucket}/${this.prefix}`;
    const resolved = resolveS3Options(uri, options);
    this.client = new S3Client({
      endpoint: resolved.endpoint,
      region: resolved.region,
      credentials: resolved.credentials,
      forcePathStyle: resolved.forcePathStyle,
    });
  }

  async put(key: string, bytes: Uint8Array): Promise<StoredArtifact> {
    const objectKey = this.prefix + checkKey(key, this.uri);
    const sha256 = sha256Hex(bytes);
    // The server checks the body against this checksum, so a corrupted upload fails here.
    await this.send(objectKey, () =>
      this.client.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: objectKey,
          Body: bytes,
          ContentLength: bytes.byteLength,
          ChecksumSHA256: Buffer.from(sha256, 'hex').toString('base64'),
        }),
      ),
    );
    return { uri: this.uriOf(objectKey), bytes: bytes.byteLength, sha256 };
  }

  async get(keyOrUri: string): Promise<Uint8Array> {
    const objectKey = this.resolve(keyOrUri);
    const answer = await this.send(objectKey, () =>
      this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: objectKey })),
    );
    if (!answer.Body) throw new ArtifactStoreError(`S3 answered ${this.uriOf(objectKey)} without a body`);
    return answer.Body.transformToByteArray();
  }

  async exists(keyOrUri: string): Promise<boolean> {
    const objectKey = this.resolve(keyOrUri);
    try {
      await this.send(objectKey, () =>
        this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: objectKey })),
      );
      return true;
    } catch (error) {
      if (error instanceof ArtifactNotFoundError) return false;
      throw error;
    }
  }

  async delete(keyOrUri: string): Promise<void> {
    const objectKey = this.resolve(keyOrUri);
    await this.send(objectKey, () =>
      this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: objectKey })),
    );
  }

  async list(prefix = ''): Promise<string[]> {
    const objectPrefix = this.prefix + checkPrefix(prefix, this.uri);
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.send(objectPrefix, () =>
        this.client.send(
          new ListObjectsV2Command({ Bucket: this.bucket, Prefix: objectPrefix, ContinuationToken: token }),
        ),
      );
      for (const object of page.Contents ?? []) {
        // Keys ending in `/` are folder markers that other tools make, not objects of ours.
        if (object.Key && !object.Key.endsWith('/')) keys.push(object.Key.slice(this.prefix.length));
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return keys.sort();
  }

  async close(): Promise<void> {
    this.client.destroy();
  }

  private uriOf(objectKey: string): string {
    return `s3://${this.bucket}/${objectKey}`;
  }

  /** The object key of a store key, or of an `s3://` URI inside the store. */
  private resolve(keyOrUri: string): string {
    if (!isUri(keyOrUri)) return this.prefix + checkKey(keyOrUri, this.uri);
    if (!keyOrUri.startsWith(this.uri)) throw new ArtifactStoreError(`${keyOrUri} is outside ${this.uri}`);
    return this.prefix + checkKey(keyOrUri.slice(this.uri.length), this.uri);
  }

  /** Runs one request, turning "no such object" into `ArtifactNotFoundError` and naming the URI in other failures. */
  private async send<T>(objectKey: string, request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (error) {
      const uri = this.uriOf(objectKey);
      if (error instanceof S3ServiceException) {
        // HEAD has no body to name the error, so its 404 arrives as a bare NotFound.
        if (error.name === 'NoSuchKey' || error.name === 'NotFound') throw new ArtifactNotFoundError(uri);
        throw new ArtifactStoreError(`S3 request for ${uri} failed: ${error.name}: ${error.message}`, { cause: error });
      }
      throw new ArtifactStoreError(`S3 request for ${uri} failed: ${(error as Error).message}`, { cause: error });
    }
  }
}
