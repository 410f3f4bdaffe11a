/**
 * The image store against real parts: Debian's docker-registry, skopeo, GNU tar, overlayfs.
 * Images are built locally (test/helpers/oci-image.ts); two of them sit on the real base image,
 * the rest are a few files so that each test can afford a cache of its own.
 */
import { execFile, spawn } from 'node:child_process';
import {
  cp,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BASE_IMAGE,
  ImageError,
  LocalImageStore,
  parseReference,
  type ImageRoot,
} from '../../sandbox/images/index.js';
import {
  buildImage,
  buildIndex,
  pushImage,
  saveArchive,
  type LayerSpec,
} from '../helpers/oci-image.js';
import { startRegistry, type TestRegistry } from '../helpers/registry.js';
import { writeTar } from '../helpers/tar.js';

const execFileAsync = promisify(execFile);

let tmp: string;
let registry: TestRegistry;
/** A two-layer image of a few files: the top layer deletes /opt/b and makes /etc/keep opaque. */
let small: string;
const SMALL_LAYERS: LayerSpec[] = [
  {
    files: {
      '/etc/keep/a': 'a\n',
      '/etc/keep/b': 'b\n',
      '/opt/b': 'b\n',
      '/opt/c': 'c\n',
      '/srv/x': 'x\n',
    },
  },
  { delete: ['/opt/b'], opaque: ['/etc/keep'], files: { '/etc/keep/n': 'n\n' } },
];

async function freshDir(name: string): Promise<string> {
  return mkdtemp(join(tmp, `${name}-`));
}

/** The error `promise` rejects with, which must be an ImageError. */
async function imageError(promise: Promise<unknown>): Promise<ImageError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ImageError);
  return err as ImageError;
}

/** Deletes from the test registry the blob of the layer unpacked in `layerDir`. */
async function dropRegistryBlob(layerDir: string): Promise<void> {
  const hex = layerDir.slice(layerDir.lastIndexOf('sha256-') + 7);
  const blobs = join(registry.storageDir, 'docker/registry/v2/blobs/sha256');
  await rm(join(blobs, hex.slice(0, 2), hex, 'data'));
}

function unpacked(lines: string[]): string[] {
  return lines.filter((l) => l.includes('unpacked layer'));
}

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'images-test-'));
  registry = await startRegistry();
  small = await buildImage({
    layout: join(tmp, 'small'),
    base: false,
    layers: SMALL_LAYERS,
    env: { FOO: 'bar=baz' },
    workingDir: '/testbed',
  });
});

afterAll(async () => {
  await registry?.stop();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('references', () => {
  it('reads bare names as docker.io references and the other transports as written', () => {
    expect(parseReference('ubuntu')).toEqual({
      transport: 'docker',
      registry: 'docker.io',
      repository: 'library/ubuntu',
      tag: 'latest',
    });
    expect(parseReference('swebench/sweb.eval.x86_64.django_1776_django-11099:v1')).toMatchObject({
      registry: 'docker.io',
      repository: 'swebench/sweb.eval.x86_64.django_1776_django-11099',
      tag: 'v1',
    });
    expect(parseReference(`127.0.0.1:5000/a/b@sha256:${'a'.repeat(64)}`)).toEqual({
      transport: 'docker',
      registry: '127.0.0.1:5000',
      repository: 'a/b',
      digest: `sha256:${'a'.repeat(64)}`,
    });
    expect(parseReference('docker://localhost/x:1')).toMatchObject({
      registry: 'localhost',
      repository: 'x',
    });
    expect(parseReference('oci:/srv/layout:v2')).toEqual({
      transport: 'oci',
      path: '/srv/layout',
      tag: 'v2',
    });
    expect(parseReference('oci-archive:/srv/a.tar')).toEqual({
      transport: 'oci-archive',
      path: '/srv/a.tar',
    });
  });

  it('rejects a malformed reference, naming it, as not retryable', async () => {
    const store = new LocalImageStore({ cacheDir: await freshDir('malformed') });
    for (const bad of [
      '',
      'Upper/Case',
      'a//b',
      'name:bad tag',
      'x@sha256:abc',
      'dir:/tmp/x',
      'oci:',
      'docker://h:port/x',
    ]) {
      const err = await imageError(store.resolve(bad));
      expect(err.retryable).toBe(false);
      expect(err.message).toContain(`image ${bad}:`);
    }
  });
});

describe('pulling', () => {
  it('resolves the base image to its build', async () => {
    const root = await new LocalImageStore({ cacheDir: await freshDir('base') }).resolve(
      BASE_IMAGE,
    );
    expect(root.layers).toHaveLength(1);
    expect((await stat(join(root.layers[0]!, 'usr/bin/python3'))).isFile()).toBe(true);
  });

  it('pulls from a registry; two images on the base share its one unpacked layer', async () => {
    const modules = await freshDir('node_modules');
    await mkdir(join(modules, 'left-pad/lib'), { recursive: true });
    await writeFile(join(modules, 'left-pad/lib/index.js'), 'module.exports = 1;\n');
    await symlink('lib/index.js', join(modules, 'left-pad/main.js'));
    const [one, two] = await Promise.all(
      ['one', 'two'].map(async (name) => {
        const ref = await buildImage({
          layout: join(tmp, `app-${name}`),
          layers: [
            {
              files: {
                '/testbed/app.py': `print("${name}")\n`,
                '/testbed/node_modules': { copyFrom: modules },
              },
            },
          ],
          env: { APP: name },
          workingDir: '/testbed',
        });
        return pushImage(ref, registry.host, `tasks/app-${name}:1`);
      }),
    );
    const cacheDir = await freshDir('shared');
    const lines: string[] = [];
    const store = new LocalImageStore({
      cacheDir,
      insecureRegistries: [registry.host],
      log: (l) => lines.push(l),
    });
    const first = await store.resolve(one!);
    // With the shared base layer gone from the registry, only a pull that skips what the cache
    // holds can succeed.
    await dropRegistryBlob(first.layers[0]!);
    const second = await store.resolve(two!);

    expect(first.layers).toHaveLength(2);
    expect(first.layers[0]).toBe(second.layers[0]);
    expect(first.layers[1]).not.toBe(second.layers[1]);
    expect(await readdir(join(cacheDir, 'layers'))).toHaveLength(3);
    const python = (root: ImageRoot) => stat(join(root.layers[0]!, 'usr/bin/python3'));
    expect((await python(first)).ino).toBe((await python(second)).ino);
    expect(await readFile(join(second.layers[1]!, 'testbed/app.py'), 'utf8')).toBe(
      'print("two")\n',
    );
    const copied = join(second.layers[1]!, 'testbed/node_modules/left-pad');
    expect(await readFile(join(copied, 'lib/index.js'), 'utf8')).toBe('module.exports = 1;\n');
    expect(await readlink(join(copied, 'main.js'))).toBe('lib/index.js');
    expect(unpacked(lines)).toHaveLength(3);

    expect(first.env).toEqual({
      PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      APP: 'one',
    });
    expect(first.workingDir).toBe('/testbed');
    expect(first.digest).toMatch(/^sha256:[a-f0-9]{64}$/);
    expect(await readdir(join(cacheDir, 'tmp'))).toEqual([]);
  });

  it('resolves an image index to its linux/amd64 image, skipping cached layers there too', async () => {
    const shared = join(tmp, 'shared-layer.tar');
    await writeTar(shared, [{ name: 'shared', content: 'both\n' }]);
    const platformImage = (name: string, architecture: string) =>
      buildImage({
        layout: join(tmp, `${name}-${architecture}`),
        base: false,
        architecture,
        layers: [{ tarFile: shared }, { files: { '/arch': `${architecture}\n`, '/name': name } }],
      });
    const multi = async (name: string) => {
      const images = [await platformImage(name, 'arm64'), await platformImage(name, 'amd64')];
      const index = await buildIndex(join(tmp, `${name}-index`), 'latest', images);
      return pushImage(index, registry.host, `tasks/${name}:1`);
    };
    const [one, two] = [await multi('multi-one'), await multi('multi-two')];
    const store = new LocalImageStore({
      cacheDir: await freshDir('multi'),
      insecureRegistries: [registry.host],
    });
    const first = await store.resolve(one);
    expect(await readFile(join(first.layers[1]!, 'arch'), 'utf8')).toBe('amd64\n');
    // The digest is the index's, as the registry names it.
    const served = await fetch(`http://${registry.host}/v2/tasks/multi-one/manifests/1`, {
      method: 'HEAD',
      headers: { accept: 'application/vnd.oci.image.index.v1+json' },
    });
    expect(first.digest).toBe(served.headers.get('docker-content-digest'));
    await dropRegistryBlob(first.layers[0]!);
    const second = await store.resolve(two);
    expect(second.layers[0]).toBe(first.layers[0]);
    expect(await readFile(join(second.layers[1]!, 'name'), 'utf8')).toBe('multi-two');
    expect(await readFile(join(second.layers[1]!, 'arch'), 'utf8')).toBe('amd64\n');
  });

  it('pulls from an OCI layout and an OCI archive of the same image into the same layers', async () => {
    const archive = await saveArchive(small, join(tmp, 'small.tar'));
    const lines: string[] = [];
    const store = new LocalImageStore({
      cacheDir: await freshDir('local'),
      log: (l) => lines.push(l),
    });
    const fromLayout = await store.resolve(small);
    const fromArchive = await store.resolve(archive);
    expect(fromArchive).toEqual(fromLayout);
    expect(fromLayout.layers).toHaveLength(2);
    expect(fromLayout.env).toEqual({ FOO: 'bar=baz' });
    expect(fromLayout.workingDir).toBe('/testbed');
    expect(unpacked(lines)).toHaveLength(2);
  });

  it('answers a digest reference and an unchanged layout from the cache, without skopeo', async () => {
    const cacheDir = await freshDir('records');
    const pushed = await pushImage(small, registry.host, 'tasks/small:1');
    const online = new LocalImageStore({ cacheDir, insecureRegistries: [registry.host] });
    const root = await online.resolve(pushed);
    await online.resolve(small);
    const offline = new LocalImageStore({ cacheDir, skopeoPath: join(tmp, 'no-skopeo') });
    const byDigest = `docker://${registry.host}/tasks/small@${root.digest}`;
    expect(await offline.resolve(byDigest)).toEqual(root);
    expect(await offline.resolve(small)).toEqual(root);
    const err = await imageError(offline.resolve(pushed));
    expect(err.message).toContain('no-skopeo is not installed');
  });

  it('looks a tag up once per store: a re-pushed tag is seen by a new store only', async () => {
    const cacheDir = await freshDir('tags');
    const tag = `docker://${registry.host}/tasks/moving:1`;
    await pushImage(small, registry.host, 'tasks/moving:1');
    const store = new LocalImageStore({ cacheDir, insecureRegistries: [registry.host] });
    const before = await store.resolve(tag);
    const moved = await buildImage({
      layout: join(tmp, 'moved'),
      base: false,
      layers: [{ files: { '/moved': 'yes\n' } }],
    });
    await pushImage(moved, registry.host, 'tasks/moving:1');
    expect((await store.resolve(tag)).digest).toBe(before.digest);
    const after = await new LocalImageStore({
      cacheDir,
      insecureRegistries: [registry.host],
    }).resolve(tag);
    expect(after.digest).not.toBe(before.digest);
    expect(await readFile(join(after.layers[0]!, 'moved'), 'utf8')).toBe('yes\n');
  });
});

describe('layers', () => {
  it('stacked with overlayfs, show the image: deleted files gone, opaque directories replaced', async () => {
    const root = await new LocalImageStore({ cacheDir: await freshDir('overlay') }).resolve(small);
    const mnt = await freshDir('mnt');
    const lower = [...root.layers].reverse().join(':');
    await execFileAsync('mount', ['-t', 'overlay', 'overlay', '-o', `ro,lowerdir=${lower}`, mnt]);
    try {
      expect((await readdir(join(mnt, 'opt'))).sort()).toEqual(['c']);
      expect(await readdir(join(mnt, 'etc/keep'))).toEqual(['n']);
      expect(await readFile(join(mnt, 'srv/x'), 'utf8')).toBe('x\n');
      expect(await readFile(join(mnt, 'etc/keep/n'), 'utf8')).toBe('n\n');
    } finally {
      await execFileAsync('umount', [mnt]);
    }
    const markers = await execFileAsync('find', [...root.layers, '-name', '.wh.*']);
    expect(markers.stdout).toBe('');
  });

  it('keeps a hostile layer inside its directory and refuses it', async () => {
    const victim = await freshDir('victim');
    await writeFile(join(victim, 'secret'), 'host secret\n');
    const up = '../'.repeat(12);
    const hostile = join(tmp, 'hostile.tar');
    await writeTar(hostile, [
      { name: `${victim}/absolute`, content: 'pwned' },
      { name: `${up}${victim.slice(1)}/dotdot`, content: 'pwned' },
      { name: 'ok/../../escape', content: 'pwned' },
      { name: 'abslink', type: 'symlink', linkname: victim },
      { name: 'abslink/through', content: 'pwned' },
      { name: 'rellink', type: 'symlink', linkname: `${up}${victim.slice(1)}` },
      { name: 'rellink/through', content: 'pwned' },
      { name: 'self', type: 'symlink', linkname: '.' },
      { name: 'self/up', type: 'symlink', linkname: '..' },
      { name: 'self/up/via-self', content: 'pwned' },
      { name: 'hard-abs', type: 'hardlink', linkname: `${victim}/secret` },
      { name: 'hard-rel', type: 'hardlink', linkname: `${up}${victim.slice(1)}/secret` },
    ]);
    const ref = await buildImage({
      layout: join(tmp, 'hostile'),
      base: false,
      layers: [{ tarFile: hostile }],
    });
    const cacheDir = await freshDir('hostile-cache');
    const err = await imageError(new LocalImageStore({ cacheDir }).resolve(ref));
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('tar refused the layer');
    expect(await readdir(victim)).toEqual(['secret']);
    expect(await readFile(join(victim, 'secret'), 'utf8')).toBe('host secret\n');
    expect(await readdir(join(cacheDir, 'layers'))).toEqual([]);
    expect(await readdir(join(cacheDir, 'tmp'))).toEqual([]);
  });

  it('keeps owners and modes by number, and drops device nodes', async () => {
    const devices = join(tmp, 'devices.tar');
    await writeTar(devices, [
      { name: 'home/agent/', type: 'dir', uid: 4321, gid: 4322, mode: 0o750 },
      { name: 'home/agent/run.sh', content: '#!/bin/sh\n', uid: 4321, gid: 4322, mode: 0o4755 },
      { name: 'dev/', type: 'dir' },
      { name: 'dev/sda', type: 'block', major: 8, minor: 0 },
      { name: 'dev/mem', type: 'char', major: 1, minor: 1 },
      { name: 'dev/readme', content: 'kept' },
    ]);
    const ref = await buildImage({
      layout: join(tmp, 'devices'),
      base: false,
      layers: [{ tarFile: devices }],
    });
    const root = await new LocalImageStore({ cacheDir: await freshDir('devices-cache') }).resolve(
      ref,
    );
    expect(await readdir(join(root.layers[0]!, 'dev'))).toEqual(['readme']);
    const home = await stat(join(root.layers[0]!, 'home/agent'));
    const script = await stat(join(root.layers[0]!, 'home/agent/run.sh'));
    expect([home.uid, home.gid, home.mode & 0o7777]).toEqual([4321, 4322, 0o750]);
    expect([script.uid, script.gid, script.mode & 0o7777]).toEqual([4321, 4322, 0o4755]);
  });

  it('refuses a corrupt blob, naming its digest', async () => {
    const layout = join(tmp, 'corrupt');
    await cp(join(tmp, 'small'), layout, { recursive: true });
    const index = JSON.parse(await readFile(join(layout, 'index.json'), 'utf8'));
    const manifestFile = join(layout, 'blobs/sha256', index.manifests[0].digest.slice(7));
    const manifest = JSON.parse(await readFile(manifestFile, 'utf8'));
    const layer: string = manifest.layers[1].digest;
    const blob = join(layout, 'blobs/sha256', layer.slice(7));
    const bytes = await readFile(blob);
    bytes[bytes.length - 9] = bytes[bytes.length - 9]! ^ 0xff;
    await writeFile(blob, bytes);
    const ref = `oci:${layout}:latest`;
    const err = await imageError(
      new LocalImageStore({ cacheDir: await freshDir('corrupt-cache') }).resolve(ref),
    );
    expect(err.retryable).toBe(false);
    expect(err.message).toContain(layer);
    expect(err.message).toContain(`image ${ref}:`);
  });
});

describe('scratch space', () => {
  it('removes what a dead process left half-unpacked, and nothing of a live one', async () => {
    const cacheDir = await freshDir('sweep');
    const dead = spawn('true');
    await new Promise((r) => dead.once('exit', r));
    const leftover = join(cacheDir, 'tmp', `layer-${dead.pid}-abc`);
    const live = join(cacheDir, 'tmp', `pull-${process.pid}-def`);
    await mkdir(join(leftover, 'usr'), { recursive: true });
    await mkdir(live, { recursive: true });
    await new LocalImageStore({ cacheDir }).resolve(small);
    expect(await readdir(join(cacheDir, 'tmp'))).toEqual([`pull-${process.pid}-def`]);
  });
});

describe('failures', () => {
  it('says an unknown tag is not found and not retryable', async () => {
    const ref = `docker://${registry.host}/tasks/nothing:here`;
    const store = new LocalImageStore({
      cacheDir: await freshDir('unknown'),
      insecureRegistries: [registry.host],
    });
    const err = await imageError(store.resolve(ref));
    expect(err.retryable).toBe(false);
    expect(err.message).toContain(`image ${ref}:`);
    expect(err.message).toContain('not found');
  });

  it('says a registry that is down is retryable', async () => {
    const down = await startRegistry();
    await down.stop();
    const ref = `${down.host}/tasks/app:1`;
    const store = new LocalImageStore({
      cacheDir: await freshDir('down'),
      insecureRegistries: [down.host],
    });
    const err = await imageError(store.resolve(ref));
    expect(err.retryable).toBe(true);
    expect(err.message).toContain(`image ${ref}:`);
  });

  it('refuses an image with no layers: it has no root file system', async () => {
    const ref = await buildImage({ layout: join(tmp, 'empty'), base: false, layers: [] });
    const err = await imageError(
      new LocalImageStore({ cacheDir: await freshDir('empty') }).resolve(ref),
    );
    expect(err.retryable).toBe(false);
    expect(err.message).toBe(`image ${ref}: the image has no layers`);
  });

  it('says a missing layout is not found', async () => {
    const ref = `oci:${join(tmp, 'no-such-layout')}:latest`;
    const err = await imageError(
      new LocalImageStore({ cacheDir: await freshDir('missing') }).resolve(ref),
    );
    expect(err.retryable).toBe(false);
  });

  it('rejects an aborted resolve with the signal reason', async () => {
    const store = new LocalImageStore({ cacheDir: await freshDir('abort') });
    const controller = new AbortController();
    controller.abort(new Error('episode cancelled'));
    await expect(store.resolve(small, { signal: controller.signal })).rejects.toThrow(
      'episode cancelled',
    );
  });
});

describe('concurrency', () => {
  it('concurrent resolves in one store pull and unpack once', async () => {
    const archive = await saveArchive(small, join(tmp, 'concurrent.tar'));
    const lines: string[] = [];
    const store = new LocalImageStore({
      cacheDir: await freshDir('concurrent'),
      log: (l) => lines.push(l),
    });
    const roots = await Promise.all([
      store.resolve(archive),
      store.resolve(archive),
      store.resolve(archive),
    ]);
    expect(roots[1]).toEqual(roots[0]);
    expect(roots[2]).toEqual(roots[0]);
    expect(unpacked(lines)).toHaveLength(2);
    expect(lines.filter((l) => l.includes('pulled'))).toHaveLength(1);
  });

  it('processes racing on one cache all get the same complete layers', async () => {
    const cacheDir = await freshDir('race');
    const child = fileURLToPath(new URL('../helpers/resolve-image-child.ts', import.meta.url));
    const inChild = () =>
      execFileAsync(process.execPath, ['--import', 'tsx', child, cacheDir, small]).then(
        ({ stdout }) => JSON.parse(stdout) as ImageRoot,
      );
    const [a, b, c] = await Promise.all([
      inChild(),
      inChild(),
      new LocalImageStore({ cacheDir }).resolve(small),
    ]);
    expect(b).toEqual(a);
    expect(c).toEqual(a);
    expect((await readdir(join(cacheDir, 'layers'))).sort()).toEqual(
      a!.layers.map((l) => l.slice(l.lastIndexOf('/') + 1)).sort(),
    );
    expect(await readdir(join(cacheDir, 'tmp'))).toEqual([]);
    expect(await readFile(join(a!.layers[1]!, 'etc/keep/n'), 'utf8')).toBe('n\n');
  });
});
