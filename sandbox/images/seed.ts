/**
 * Layers already unpacked are not downloaded again. skopeo copies into an OCI layout only the
 * blobs the layout lacks, so before a registry pull the private layout gets a placeholder (a
 * sparse file of the blob's size) for each of the image's layers that the cache holds; the
 * store never reads those blobs, as their directories exist. Costs one or two manifest lookups.
 */
import { mkdir, open, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import type { LayerCache } from './layer-cache.js';
import { blobPath, descriptorSchema, IMAGE_MANIFEST_TYPES, manifestSchema } from './oci.js';
import { skopeoName, type RegistryReference } from './reference.js';
import type { Skopeo, SourceOptions } from './skopeo.js';

const platformIndexSchema = z.object({
  manifests: z.array(
    descriptorSchema.extend({
      platform: z.object({ os: z.string(), architecture: z.string() }).optional(),
    }),
  ),
});

function parse(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** The linux/amd64 image manifest `digest` names, or undefined when it is not one we can read. */
async function imageManifest(
  skopeo: Skopeo,
  ref: RegistryReference,
  digest: string,
  reference: string,
  src: SourceOptions,
): Promise<z.infer<typeof manifestSchema> | undefined> {
  const top = parse(await skopeo.rawManifest(skopeoName(ref, digest), reference, src));
  const index = platformIndexSchema.safeParse(top);
  if (!index.success) {
    const manifest = manifestSchema.safeParse(top);
    return manifest.success ? manifest.data : undefined;
  }
  const entry = index.data.manifests.find(
    (m) => m.platform?.os === 'linux' && m.platform.architecture === 'amd64',
  );
  if (entry === undefined || !IMAGE_MANIFEST_TYPES.has(entry.mediaType)) return undefined;
  const manifest = manifestSchema.safeParse(
    parse(await skopeo.rawManifest(skopeoName(ref, entry.digest), reference, src)),
  );
  return manifest.success ? manifest.data : undefined;
}

/** Seeds `layout` with placeholders for the cached layers of the image `digest` names. */
export async function seedCachedLayers(
  layout: string,
  layers: LayerCache,
  skopeo: Skopeo,
  ref: RegistryReference,
  digest: string,
  reference: string,
  src: SourceOptions,
): Promise<void> {
  const manifest = await imageManifest(skopeo, ref, digest, reference, src);
  if (manifest === undefined) return;
  await mkdir(layout, { recursive: true });
  await writeFile(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  for (const layer of manifest.layers) {
    if (!(await layers.has(layer.digest))) continue;
    const file = blobPath(layout, layer.digest);
    await mkdir(dirname(file), { recursive: true });
    const handle = await open(file, 'w');
    await handle.truncate(layer.size);
    await handle.close();
  }
}
