/**
 * The published OCI formats this store reads (image-spec v1: image layout, index, manifest,
 * config; Docker v2 schema 2 media types as equivalents), each parsed with zod because a layout
 * and everything in it come from outside.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { digestSchema } from './reference.js';

export const descriptorSchema = z.object({
  mediaType: z.string(),
  digest: digestSchema,
  size: z.number().int().nonnegative(),
  annotations: z.record(z.string(), z.string()).optional(),
});
export type Descriptor = z.infer<typeof descriptorSchema>;

export const indexSchema = z.object({
  schemaVersion: z.literal(2),
  manifests: z.array(descriptorSchema),
});

export const manifestSchema = z.object({
  schemaVersion: z.literal(2),
  mediaType: z.string().optional(),
  config: descriptorSchema,
  layers: z.array(descriptorSchema),
});
export type Manifest = z.infer<typeof manifestSchema>;

export const configSchema = z.object({
  config: z
    .object({
      Env: z.array(z.string()).nullish(),
      WorkingDir: z.string().nullish(),
    })
    .nullish(),
});

/** Manifest media types of an image (not an index): OCI and Docker v2 schema 2. */
export const IMAGE_MANIFEST_TYPES = new Set([
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.v2+json',
]);

export type Compression = 'none' | 'gzip' | 'zstd';

/** How each layer media type is compressed (the non-distributable variants unpack the same). */
const LAYER_TYPES: Record<string, Compression> = {
  'application/vnd.oci.image.layer.v1.tar': 'none',
  'application/vnd.oci.image.layer.v1.tar+gzip': 'gzip',
  'application/vnd.oci.image.layer.v1.tar+zstd': 'zstd',
  'application/vnd.oci.image.layer.nondistributable.v1.tar': 'none',
  'application/vnd.oci.image.layer.nondistributable.v1.tar+gzip': 'gzip',
  'application/vnd.oci.image.layer.nondistributable.v1.tar+zstd': 'zstd',
  'application/vnd.docker.image.rootfs.diff.tar': 'none',
  'application/vnd.docker.image.rootfs.diff.tar.gzip': 'gzip',
  'application/vnd.docker.image.rootfs.foreign.diff.tar.gzip': 'gzip',
};

/** The compression of a layer media type, or undefined for one this store cannot unpack. */
export function layerCompression(mediaType: string): Compression | undefined {
  return LAYER_TYPES[mediaType];
}

const REF_NAME = 'org.opencontainers.image.ref.name';

/** Where a blob lives in an OCI layout. */
export function blobPath(layout: string, digest: string): string {
  const [algo, hex] = digest.split(':') as [string, string];
  return join(layout, 'blobs', algo, hex);
}

/** The content digest (`<algo>:<hex>`) of a file, in the algorithm `like` names. */
async function fileDigest(path: string, like: string): Promise<string> {
  const algo = like.slice(0, like.indexOf(':'));
  const hash = createHash(algo);
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return `${algo}:${hash.digest('hex')}`;
}

/** Why a blob does not match its descriptor, or undefined when it does. */
export async function blobMismatch(layout: string, d: Descriptor): Promise<string | undefined> {
  const path = blobPath(layout, d.digest);
  const size = await stat(path).then(
    (s) => s.size,
    () => undefined,
  );
  if (size === undefined) return `blob ${d.digest} is missing`;
  if (size !== d.size) return `blob ${d.digest} has ${size} bytes, its descriptor says ${d.size}`;
  const actual = await fileDigest(path, d.digest);
  return actual === d.digest ? undefined : `blob ${d.digest} is corrupt (its content is ${actual})`;
}

/** Reads and parses a JSON blob after checking it against its descriptor. */
export async function readJsonBlob<T>(
  layout: string,
  d: Descriptor,
  schema: z.ZodType<T>,
): Promise<{ value: T } | { error: string }> {
  const mismatch = await blobMismatch(layout, d);
  if (mismatch !== undefined) return { error: mismatch };
  let json: unknown;
  try {
    json = JSON.parse(await readFile(blobPath(layout, d.digest), 'utf8'));
  } catch {
    return { error: `blob ${d.digest} is not JSON` };
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { error: `blob ${d.digest}: ${issue?.path.join('.')} ${issue?.message}` };
  }
  return { value: parsed.data };
}

/**
 * The manifest entry of an index that `tag` names (its ref-name annotation), or the only entry
 * when `tag` is undefined, as skopeo picks it.
 */
export function pickManifest(
  index: z.infer<typeof indexSchema>,
  tag: string | undefined,
): Descriptor | string {
  if (tag === undefined) {
    if (index.manifests.length === 1) return index.manifests[0]!;
    return `it holds ${index.manifests.length} images and the reference names no tag`;
  }
  const found = index.manifests.find((m) => m.annotations?.[REF_NAME] === tag);
  return found ?? `it has no image tagged "${tag}"`;
}

/**
 * The image `tag` names in an OCI layout: its manifest and config, each checked against its
 * descriptor and parsed. An image with no layers has no root file system, so it is an error too.
 */
export async function readImage(
  layout: string,
  tag: string,
): Promise<{ manifest: Manifest; config: z.infer<typeof configSchema> } | { error: string }> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(join(layout, 'index.json'), 'utf8'));
  } catch {
    return { error: `the layout's index.json is missing or not JSON` };
  }
  const index = indexSchema.safeParse(json);
  if (!index.success) return { error: `the layout's index.json is not an OCI index` };
  const entry = pickManifest(index.data, tag);
  if (typeof entry === 'string') return { error: `the layout: ${entry}` };
  if (!IMAGE_MANIFEST_TYPES.has(entry.mediaType)) {
    return { error: `no linux/amd64 image (manifest type ${entry.mediaType})` };
  }
  const manifest = await readJsonBlob(layout, entry, manifestSchema);
  if ('error' in manifest) return manifest;
  if (manifest.value.layers.length === 0) return { error: 'the image has no layers' };
  const config = await readJsonBlob(layout, manifest.value.config, configSchema);
  if ('error' in config) return config;
  return { manifest: manifest.value, config: config.value };
}
