import { z } from 'zod';
import { ArtifactStoreError } from './types.js';

/**
 * How to reach an S3-compatible object store. Every option may be left out: each falls back to an
 * `AWS_*` environment variable, then to a default.
 */
export interface S3ArtifactsOptions {
  /**
   * Endpoint URL of an S3-compatible server (`http://127.0.0.1:7070`, `https://s3.example.org`).
   *
   * @default `$AWS_ENDPOINT_URL`, else AWS S3 itself, found from the region
   */
  endpoint?: string;
  /**
   * Region to sign requests for.
   *
   * @default `$AWS_REGION`, else `$AWS_DEFAULT_REGION`, else `'us-east-1'`
   */
  region?: string;
  /**
   * Access key id; give it with `secretAccessKey` or not at all.
   *
   * @default `$AWS_ACCESS_KEY_ID` (with `$AWS_SECRET_ACCESS_KEY` and `$AWS_SESSION_TOKEN`), else the
   * AWS SDK's default credential chain (shared config files, instance or task roles)
   */
  accessKeyId?: string;
  /**
   * Secret access key of `accessKeyId`.
   *
   * @default `$AWS_SECRET_ACCESS_KEY`
   */
  secretAccessKey?: string;
  /**
   * Address buckets as `<endpoint>/<bucket>/<key>` rather than `<bucket>.<endpoint>/<key>`:
   * S3-compatible servers rarely have per-bucket DNS names.
   *
   * @default `true` when an endpoint is set (by option or environment), `false` for AWS S3
   */
  forcePathStyle?: boolean;
  /**
   * Where the `AWS_*` fallbacks are read from; an empty variable counts as unset.
   *
   * @default `process.env`
   */
  env?: Record<string, string | undefined>;
}

/** Options with every fallback applied, as the S3 client is built from them. */
export interface ResolvedS3Options {
  endpoint: string | undefined;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string } | undefined;
  forcePathStyle: boolean;
}

const nonEmpty = z.string().min(1);
const Schema = z.strictObject({
  endpoint: z.url({ protocol: /^https?$/ }).optional(),
  region: nonEmpty.optional(),
  accessKeyId: nonEmpty.optional(),
  secretAccessKey: nonEmpty.optional(),
  forcePathStyle: z.boolean().optional(),
  env: z.record(z.string(), z.string().optional()).optional(),
});

/** Validates `options` and fills in the environment's and the defaults; errors name `uri`. */
export function resolveS3Options(uri: string, options: S3ArtifactsOptions): ResolvedS3Options {
  const parsed = Schema.safeParse(options);
  if (!parsed.success) {
    throw new ArtifactStoreError(`invalid S3 options for ${uri}:\n${z.prettifyError(parsed.error)}`);
  }
  const o = parsed.data;
  const env = o.env ?? process.env;
  const fromEnv = (name: string): string | undefined => env[name] || undefined;
  const endpoint = o.endpoint ?? fromEnv('AWS_ENDPOINT_URL');
  if (endpoint !== undefined && !z.url({ protocol: /^https?$/ }).safeParse(endpoint).success) {
    throw new ArtifactStoreError(`invalid S3 endpoint ${JSON.stringify(endpoint)} for ${uri}: not an http(s) URL`);
  }
  if ((o.accessKeyId === undefined) !== (o.secretAccessKey === undefined)) {
    throw new ArtifactStoreError(`S3 options for ${uri}: accessKeyId and secretAccessKey go together`);
  }
  const accessKeyId = o.accessKeyId ?? fromEnv('AWS_ACCESS_KEY_ID');
  const secretAccessKey = o.secretAccessKey ?? fromEnv('AWS_SECRET_ACCESS_KEY');
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
    throw new ArtifactStoreError(`S3 credentials for ${uri}: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together`);
  }
  const sessionToken = o.accessKeyId === undefined ? fromEnv('AWS_SESSION_TOKEN') : undefined;
  return {
    endpoint,
    region: o.region ?? fromEnv('AWS_REGION') ?? fromEnv('AWS_DEFAULT_REGION') ?? 'us-east-1',
    credentials:
      accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) } : undefined,
    forcePathStyle: o.forcePathStyle ?? endpoint !== undefined,
  };
}
