/**
 * The image store of a worker host: resolves a reference to unpacked layer directories in a
 * content-addressed cache, pulling with skopeo on first use.
 *
 *   <cacheDir>/layers/<algo>-<hex>/   one unpacked layer, named by its blob digest
 *   <cacheDir>/images/<algo>-<hex>.json  a resolved image (its layers, env, working directory),
 *                                     named by the digest its source gives the reference
 *   <cacheDir>/tmp/                   pull layouts and unpacks in progress (same file system, so
 *                                     finished ones are renamed into place; scratch.ts)
 *
 * A digest reference, or an OCI layout or archive whose index is unchanged, resolves from its
 * record without a pull; a tag is looked up at its registry (`skopeo inspect`) once per store.
 *
 * Unpacking needs root: layers keep their owners, and overlayfs whiteouts are character devices
 * and `trusted.*` extended attributes.
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { z } from 'zod';
import { baseImageRoot, DEFAULT_BASE_IMAGE_DIR } from './base.js';
import { LayerCache } from './layer-cache.js';
import { indexSchema, pickManifest, readImage } from './oci.js';
import { digestSchema, parseReference, skopeoName, type ImageReference } from './reference.js';
import { seedCachedLayers } from './seed.js';
import { Skopeo } from './skopeo.js';
import { BASE_IMAGE, ImageError, type ImageRoot, type ImageStore } from './types.js';

const execFileAsync = promisify(execFile);

export interface LocalImageStoreOptions {
  /** Where unpacked layers, image records and pulls in progress live. Required. */
  cacheDir: string;
  /** The base image's build directory (`BASE_IMAGE` resolves to it). Default `DEFAULT_BASE_IMAGE_DIR`. */
  baseImageDir?: string;
  /** Registry hosts (`127.0.0.1:5000`) pulled from without TLS verification. Default none. */
  insecureRegistries?: string[];
  /** skopeo auth file with registry credentials. Default none (skopeo's own lookup). */
  authFile?: string;
  /** The skopeo binary. Default `skopeo` (on PATH). */
  skopeoPath?: string;
  /** Receives a line per layer unpacked and per image pulled (long pulls show progress). Default none. */
  log?: (line: string) => void;
}

const optionsSchema = z.object({
  cacheDir: z.string().min(1),
  baseImageDir: z.string().min(1).default(DEFAULT_BASE_IMAGE_DIR),
  insecureRegistries: z.array(z.string().min(1)).default([]),
  authFile: z.string().min(1).optional(),
  skopeoPath: z.string().min(1).default('skopeo'),
});

const recordSchema = z.object({
  digest: digestSchema,
  layers: z.array(digestSchema),
  env: z.record(z.string(), z.string()),
  workingDir: z.string().optional(),
});
type ImageRecord = z.infer<typeof recordSchema>;

/** The tag skopeo writes each pull under in its private layout. */
const PULL_TAG = 'image';

function parseEnv(entries: readonly string[] | null | undefined): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of entries ?? []) {
    const eq = entry.indexOf('=');
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return env;
}

/** `work`, or the signal's reason once it aborts (the shared work goes on for other callers). */
function abortable<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return work;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

export class LocalImageStore implements ImageStore {
  private readonly options: z.infer<typeof optionsSchema>;
  private readonly skopeo: Skopeo;
  private readonly layers: LayerCache;
  private readonly log: ((line: string) => void) | undefined;
  private readonly imagesDir: string;
  /** Images by source digest, resolved or being resolved. */
  private readonly images = new Map<string, Promise<ImageRoot>>();
  /** What each tag reference pointed at when this store first looked. */
  private readonly tags = new Map<string, Promise<string>>();

  constructor(options: LocalImageStoreOptions) {
    this.options = optionsSchema.parse(options);
    this.log = options.log;
    this.skopeo = new Skopeo({ path: this.options.skopeoPath, authFile: this.options.authFile });
    this.layers = new LayerCache(this.options.cacheDir, this.log);
    this.imagesDir = join(this.options.cacheDir, 'images');
  }

  resolve(reference: string, options?: { signal?: AbortSignal }): Promise<ImageRoot> {
    return abortable(this.resolveShared(reference), options?.signal);
  }

  private async resolveShared(reference: string): Promise<ImageRoot> {
    if (reference === BASE_IMAGE) return baseImageRoot(this.options.baseImageDir);
    const ref = parseReference(reference);
    const digest = await this.sourceDigest(ref, reference);
    let pending = this.images.get(digest);
    if (pending === undefined) {
      pending = this.fromCacheOrPull(ref, reference, digest);
      this.images.set(digest, pending);
      pending.catch(() => this.images.delete(digest));
    }
    return pending;
  }

  private insecure(ref: ImageReference): boolean {
    return ref.transport === 'docker' && this.options.insecureRegistries.includes(ref.registry);
  }

  /** The digest the reference's source gives it now (a digest reference names its own). */
  private async sourceDigest(ref: ImageReference, reference: string): Promise<string> {
    if (ref.transport !== 'docker') return this.localDigest(ref, reference);
    if (ref.digest !== undefined) return ref.digest;
    const name = skopeoName(ref);
    let pending = this.tags.get(name);
    if (pending === undefined) {
      pending = this.skopeo.manifestDigest(name, reference, { insecure: this.insecure(ref) });
      this.tags.set(name, pending);
      pending.catch(() => this.tags.delete(name));
    }
    return pending;
  }

  /** The digest an OCI layout's or archive's index gives the reference's tag. */
  private async localDigest(
    ref: Extract<ImageReference, { transport: 'oci' | 'oci-archive' }>,
    reference: string,
  ): Promise<string> {
    let text: string;
    try {
      text =
        ref.transport === 'oci'
          ? await readFile(join(ref.path, 'index.json'), 'utf8')
          : (await execFileAsync('tar', ['-xOf', ref.path, 'index.json'], { maxBuffer: 64 << 20 }))
              .stdout;
    } catch {
      const what = ref.transport === 'oci' ? 'OCI layout' : 'OCI archive';
      throw new ImageError(
        `image ${reference}: no ${what} with an index.json at ${ref.path}`,
        false,
      );
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new ImageError(`image ${reference}: index.json of ${ref.path} is not JSON`, false);
    }
    const index = indexSchema.safeParse(json);
    if (!index.success) {
      throw new ImageError(
        `image ${reference}: index.json of ${ref.path} is not an OCI index`,
        false,
      );
    }
    const picked = pickManifest(index.data, ref.tag);
    if (typeof picked === 'string') throw new ImageError(`image ${reference}: ${picked}`, false);
    return picked.digest;
  }

  private recordPath(digest: string): string {
    return join(this.imagesDir, `${digest.replace(':', '-')}.json`);
  }

  private toRoot(record: ImageRecord): ImageRoot {
    return {
      digest: record.digest,
      layers: record.layers.map((d) => this.layers.dirOf(d)),
      env: { ...record.env },
      ...(record.workingDir === undefined ? {} : { workingDir: record.workingDir }),
    };
  }

  /** The recorded image, when its record parses and every layer it lists is unpacked. */
  private async cached(digest: string): Promise<ImageRecord | undefined> {
    const text = await readFile(this.recordPath(digest), 'utf8').catch(() => undefined);
    if (text === undefined) return undefined;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return undefined;
    }
    const record = recordSchema.safeParse(json);
    if (!record.success || record.data.digest !== digest) return undefined;
    const present = await Promise.all(record.data.layers.map((d) => this.layers.has(d)));
    return present.every(Boolean) ? record.data : undefined;
  }

  private async fromCacheOrPull(
    ref: ImageReference,
    reference: string,
    digest: string,
  ): Promise<ImageRoot> {
    const record = (await this.cached(digest)) ?? (await this.pull(ref, reference, digest));
    return this.toRoot(record);
  }

  private async pull(ref: ImageReference, reference: string, digest: string): Promise<ImageRecord> {
    const scratch = await this.layers.scratch.make('pull');
    const started = Date.now();
    try {
      const layout = join(scratch, 'layout');
      // A tag is pinned to the digest looked up, so what is unpacked is what the record names.
      const source = skopeoName(ref, ref.transport === 'docker' ? digest : undefined);
      this.log?.(`image ${reference}: pulling ${digest}`);
      const src = { insecure: this.insecure(ref) };
      if (ref.transport === 'docker') {
        await seedCachedLayers(layout, this.layers, this.skopeo, ref, digest, reference, src);
      }
      await this.skopeo.copy(source, layout, PULL_TAG, reference, src);
      const image = await readImage(layout, PULL_TAG);
      if ('error' in image) throw new ImageError(`image ${reference}: ${image.error}`, false);
      const { manifest, config } = image;
      // One layer at a time: unpacking is disk- and CPU-bound, and the log reads in order.
      for (const layer of manifest.layers) await this.layers.ensure(layout, layer, reference);
      const record: ImageRecord = {
        digest,
        layers: manifest.layers.map((l) => l.digest),
        env: parseEnv(config.config?.Env),
        ...(config.config?.WorkingDir ? { workingDir: config.config.WorkingDir } : {}),
      };
      await this.writeRecord(record, scratch);
      const layers = record.layers.length;
      this.log?.(
        `image ${reference}: pulled ${digest} (${layers} layers, ${Date.now() - started} ms)`,
      );
      return record;
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }

  private async writeRecord(record: ImageRecord, scratch: string): Promise<void> {
    await mkdir(this.imagesDir, { recursive: true });
    const tmp = join(scratch, 'record.json');
    await writeFile(tmp, `${JSON.stringify(record, null, 2)}\n`);
    await rename(tmp, this.recordPath(record.digest));
  }
}
