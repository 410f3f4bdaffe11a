/**
 * Builds OCI images for tests without Docker or a daemon: each layer is a staging directory
 * tarred with GNU tar (whiteouts as the OCI `.wh.` marker files), written with its config,
 * manifest and index into an OCI image layout. `skopeo` then pushes it to a registry or saves
 * it as an OCI archive.
 *
 * The base image (.tools/images/base/rootfs, 646 MB) as a layer takes seconds to tar, so its OCI
 * layout is built once per base id under .tools/images/base-oci/<id>/ (tag `base`), atomically:
 * two test processes racing both build, one rename wins, the other discards its copy.
 *
 *   const ref = await buildImage({
 *     layout: join(tmp, 'img'),
 *     layers: [{ files: { '/testbed/a.py': 'print(1)\n', '/testbed/node_modules': { copyFrom: dir } },
 *                delete: ['/etc/motd'] }],
 *     env: { LANG: 'C.UTF-8' }, workingDir: '/testbed',
 *   });                                   // 'oci:<tmp>/img:latest', base layer + one layer
 *   const pulled = await pushImage(ref, registry.host, 'tasks/demo:1');  // 'docker://…'
 */
import { execFile, spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import {
  copyFile,
  cp,
  link,
  mkdir,
  mkdtemp,
  readFile,
  rename,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { DEFAULT_BASE_IMAGE_DIR } from '../../sandbox/images/base.js';
import { ScratchSpace } from '../../sandbox/images/scratch.js';

const execFileAsync = promisify(execFile);

export interface LayerSpec {
  /**
   * Files to add, by absolute image path: the content as a string, or `{ copyFrom }` a host file
   * or directory copied there recursively (e.g. a repository with its node_modules). Parent
   * directories the layer has to create are root's, mode 0755, in the image too. Default none.
   */
  files?: Record<string, string | { copyFrom: string }>;
  /** Image paths this layer deletes from the layers below (whiteout markers). Default none. */
  delete?: string[];
  /**
   * Image directories this layer makes opaque: their contents in the layers below are hidden and
   * only what this layer's `files` puts under them is seen. Default none.
   */
  opaque?: string[];
  /**
   * A ready uncompressed tar used as the layer byte for byte (a hand-made hostile one, say); the
   * other fields are ignored then. Default none.
   */
  tarFile?: string;
}

export interface BuildImageOptions {
  /** Directory the OCI layout is written to (created; must not hold another layout). */
  layout: string;
  /** The image's tag in the layout. Default `latest`. */
  tag?: string;
  /** Start from the base image (one layer: its rootfs, with its PATH). Default true. */
  base?: boolean;
  /** Layers on top, lowest first. */
  layers: LayerSpec[];
  /** Environment added to the config's `Env` (over the base's). Default none. */
  env?: Record<string, string>;
  /** The config's `WorkingDir`. Default none. */
  workingDir?: string;
  /** The config's `architecture` (the OS is linux). Default `amd64`. */
  architecture?: string;
}

const MANIFEST_TYPE = 'application/vnd.oci.image.manifest.v1+json';
const CONFIG_TYPE = 'application/vnd.oci.image.config.v1+json';
const INDEX_TYPE = 'application/vnd.oci.image.index.v1+json';
const REF_NAME = 'org.opencontainers.image.ref.name';

interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
}

interface ImageConfig {
  architecture: string;
  os: string;
  config: { Env?: string[]; WorkingDir?: string };
  rootfs: { type: 'layers'; diff_ids: string[] };
  history: { created_by: string }[];
}

function sha256(data: Buffer | string): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

/** sha256 of what a command writes to stdout (a decompressed layer: its diff id). */
function stdoutDigest(argv: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
    const hash = createHash('sha256');
    child.stdout.on('data', (d: Buffer) => hash.update(d));
    child.once('error', reject);
    // 'close', not 'exit': stdout may still hold data when the process has exited.
    child.once('close', (code) =>
      code === 0
        ? resolve(`sha256:${hash.digest('hex')}`)
        : reject(new Error(`${argv.join(' ')} exited ${code}`)),
    );
  });
}

async function fileSha256(path: string): Promise<string> {
  const { stdout } = await execFileAsync('sha256sum', [path]);
  return `sha256:${stdout.slice(0, 64)}`;
}

function blobFile(layout: string, digest: string): string {
  return join(layout, 'blobs', 'sha256', digest.slice(7));
}

async function writeBlob(layout: string, mediaType: string, data: string): Promise<Descriptor> {
  const digest = sha256(data);
  await mkdir(join(layout, 'blobs', 'sha256'), { recursive: true });
  await writeFile(blobFile(layout, digest), data);
  return { mediaType, digest, size: Buffer.byteLength(data) };
}

/** Moves a finished layer tarball into the layout as a blob; returns its descriptor and diff id. */
async function addLayerBlob(
  layout: string,
  file: string,
  mediaType: string,
  decompress: string[],
): Promise<{ descriptor: Descriptor; diffId: string }> {
  const digest = await fileSha256(file);
  const diffId = await stdoutDigest([...decompress, file]);
  const { size } = await stat(file);
  await mkdir(join(layout, 'blobs', 'sha256'), { recursive: true });
  await rename(file, blobFile(layout, digest));
  return { descriptor: { mediaType, digest, size }, diffId };
}

async function writeImage(
  layout: string,
  tag: string,
  layers: Descriptor[],
  config: ImageConfig,
): Promise<void> {
  const configDescriptor = await writeBlob(layout, CONFIG_TYPE, JSON.stringify(config));
  const manifest = { schemaVersion: 2, mediaType: MANIFEST_TYPE, config: configDescriptor, layers };
  const manifestDescriptor = await writeBlob(layout, MANIFEST_TYPE, JSON.stringify(manifest));
  const index = {
    schemaVersion: 2,
    manifests: [{ ...manifestDescriptor, annotations: { [REF_NAME]: tag } }],
  };
  await writeFile(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  await writeFile(join(layout, 'index.json'), JSON.stringify(index));
}

/**
 * The base image as an OCI layout (tag `base`, one zstd layer), built on first use per base id.
 * Returns the layout directory.
 */
export async function baseLayout(baseImageDir: string = DEFAULT_BASE_IMAGE_DIR): Promise<string> {
  const id = (await readFile(join(baseImageDir, 'id'), 'utf8')).trim();
  const root = join(dirname(baseImageDir), 'base-oci');
  const done = join(root, id);
  if (
    await stat(join(done, 'index.json')).then(
      () => true,
      () => false,
    )
  )
    return done;
  // Scratch named by process: what a killed build leaves is swept by the next one.
  const scratch = await new ScratchSpace(join(root, 'tmp')).make('build');
  try {
    const tarball = join(scratch, 'layer.tar.zst');
    await execFileAsync('tar', [
      '--create',
      '--zstd',
      '--numeric-owner',
      '--sort=name',
      '--file',
      tarball,
      '--directory',
      join(baseImageDir, 'rootfs'),
      '.',
    ]);
    const { descriptor, diffId } = await addLayerBlob(
      scratch,
      tarball,
      'application/vnd.oci.image.layer.v1.tar+zstd',
      ['zstd', '-dcq'],
    );
    await writeImage(scratch, 'base', [descriptor], {
      architecture: 'amd64',
      os: 'linux',
      config: { Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'] },
      rootfs: { type: 'layers', diff_ids: [diffId] },
      history: [{ created_by: `scripts/build-base-image.sh (${id})` }],
    });
    await rename(scratch, done).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
    });
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  return done;
}

/** Hard-links (or copies, across file systems) a blob of one layout into another. */
async function shareBlob(from: string, to: string, digest: string): Promise<void> {
  await mkdir(join(to, 'blobs', 'sha256'), { recursive: true });
  await link(blobFile(from, digest), blobFile(to, digest)).catch(
    async (err: NodeJS.ErrnoException) => {
      if (err.code === 'EXDEV') await copyFile(blobFile(from, digest), blobFile(to, digest));
      else if (err.code !== 'EEXIST') throw err;
    },
  );
}

async function stageLayer(stage: string, spec: LayerSpec): Promise<void> {
  const at = (path: string): string => join(stage, path);
  for (const dir of spec.opaque ?? []) {
    await mkdir(at(dir), { recursive: true });
    await writeFile(join(at(dir), '.wh..wh..opq'), '');
  }
  for (const path of spec.delete ?? []) {
    await mkdir(dirname(at(path)), { recursive: true });
    await writeFile(join(dirname(at(path)), `.wh.${path.split('/').pop()}`), '');
  }
  for (const [path, content] of Object.entries(spec.files ?? {})) {
    await mkdir(dirname(at(path)), { recursive: true });
    if (typeof content === 'string') await writeFile(at(path), content);
    else await cp(content.copyFrom, at(path), { recursive: true, verbatimSymlinks: true });
  }
}

/** Builds the image into `options.layout`; returns its reference, `oci:<layout>:<tag>`. */
export async function buildImage(options: BuildImageOptions): Promise<string> {
  const { layout } = options;
  const tag = options.tag ?? 'latest';
  await mkdir(layout, { recursive: true });
  const layers: Descriptor[] = [];
  const config: ImageConfig = {
    architecture: options.architecture ?? 'amd64',
    os: 'linux',
    config: {},
    rootfs: { type: 'layers', diff_ids: [] },
    history: [],
  };
  if (options.base ?? true) {
    const base = await baseLayout();
    const index = JSON.parse(await readFile(join(base, 'index.json'), 'utf8'));
    const manifest = JSON.parse(await readFile(blobFile(base, index.manifests[0].digest), 'utf8'));
    const baseConfig = JSON.parse(
      await readFile(blobFile(base, manifest.config.digest), 'utf8'),
    ) as ImageConfig;
    for (const layer of manifest.layers as Descriptor[]) {
      await shareBlob(base, layout, layer.digest);
      layers.push(layer);
    }
    config.config = { ...baseConfig.config };
    config.rootfs.diff_ids.push(...baseConfig.rootfs.diff_ids);
    config.history.push(...baseConfig.history);
  }
  const scratch = await mkdtemp(join(tmpdir(), 'oci-layer-'));
  try {
    for (const spec of options.layers) {
      if (spec.tarFile !== undefined) {
        const copy = join(scratch, `${randomUUID()}.tar`);
        await copyFile(spec.tarFile, copy);
        const { descriptor, diffId } = await addLayerBlob(
          layout,
          copy,
          'application/vnd.oci.image.layer.v1.tar',
          ['cat'],
        );
        layers.push(descriptor);
        config.rootfs.diff_ids.push(diffId);
        config.history.push({ created_by: 'test/helpers/oci-image.ts (tar file)' });
        continue;
      }
      const stage = join(scratch, randomUUID());
      await mkdir(stage);
      await stageLayer(stage, spec);
      const tarball = join(scratch, `${randomUUID()}.tar.gz`);
      await execFileAsync('tar', [
        '--create',
        '--gzip',
        '--numeric-owner',
        '--owner=0',
        '--group=0',
        '--sort=name',
        '--file',
        tarball,
        '--directory',
        stage,
        '.',
      ]);
      const { descriptor, diffId } = await addLayerBlob(
        layout,
        tarball,
        'application/vnd.oci.image.layer.v1.tar+gzip',
        ['gzip', '-dc'],
      );
      layers.push(descriptor);
      config.rootfs.diff_ids.push(diffId);
      config.history.push({ created_by: 'test/helpers/oci-image.ts' });
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  const env = new Map(
    (config.config.Env ?? []).map((e) => [e.slice(0, e.indexOf('=')), e] as const),
  );
  for (const [key, value] of Object.entries(options.env ?? {})) env.set(key, `${key}=${value}`);
  if (env.size > 0) config.config.Env = [...env.values()];
  if (options.workingDir !== undefined) config.config.WorkingDir = options.workingDir;
  await writeImage(layout, tag, layers, config);
  return `oci:${layout}:${tag}`;
}

/** Pushes `source` (any skopeo reference) to the plain-HTTP registry `host` as `nameTag`. */
/**
 * An image index (a multi-platform image) of images built by `buildImage`, each listed with its
 * config's platform, written into the new layout `layout` as `tag`; returns `oci:<layout>:<tag>`.
 */
export async function buildIndex(layout: string, tag: string, images: string[]): Promise<string> {
  await mkdir(layout, { recursive: true });
  const manifests: (Descriptor & { platform: { os: string; architecture: string } })[] = [];
  for (const image of images) {
    const [, dir, imageTag] = /^oci:(.*):([^:]+)$/.exec(image) ?? [];
    if (dir === undefined)
      throw new Error(`buildIndex takes oci:<layout>:<tag> images, not ${image}`);
    const index = JSON.parse(await readFile(join(dir, 'index.json'), 'utf8'));
    const entry = index.manifests.find((m: any) => m.annotations?.[REF_NAME] === imageTag);
    const manifest = JSON.parse(await readFile(blobFile(dir, entry.digest), 'utf8'));
    const config = JSON.parse(await readFile(blobFile(dir, manifest.config.digest), 'utf8'));
    for (const blob of [entry, manifest.config, ...manifest.layers] as Descriptor[]) {
      await shareBlob(dir, layout, blob.digest);
    }
    manifests.push({
      mediaType: MANIFEST_TYPE,
      digest: entry.digest,
      size: entry.size,
      platform: { os: config.os, architecture: config.architecture },
    });
  }
  const imageIndex = { schemaVersion: 2, mediaType: INDEX_TYPE, manifests };
  const descriptor = await writeBlob(layout, INDEX_TYPE, JSON.stringify(imageIndex));
  await writeFile(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  await writeFile(
    join(layout, 'index.json'),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [{ ...descriptor, annotations: { [REF_NAME]: tag } }],
    }),
  );
  return `oci:${layout}:${tag}`;
}

/**
 * Pushes `source` (any skopeo reference; every platform of an index) to the plain-HTTP registry
 * `host` as `nameTag`; returns the `docker://` reference.
 */
export async function pushImage(source: string, host: string, nameTag: string): Promise<string> {
  const target = `docker://${host}/${nameTag}`;
  await execFileAsync('skopeo', [
    'copy',
    '--quiet',
    '--all',
    '--dest-tls-verify=false',
    source,
    target,
  ]);
  return target;
}

/** Saves `source` as an OCI archive file; returns its reference, `oci-archive:<file>:<tag>`. */
export async function saveArchive(source: string, file: string, tag = 'latest'): Promise<string> {
  const target = `oci-archive:${file}:${tag}`;
  await execFileAsync('skopeo', ['copy', '--quiet', '--all', source, target]);
  return target;
}
