/**
 * Roots are shared: sandboxes of one image and one layout of mounts use one read-only overlay,
 * mounted once by the provider's mount helper and unmounted when the provider is released.
 */
import { existsSync } from 'node:fs';
import { chmod, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BubblewrapProvider, defaultMountRoot } from '../../sandbox/bubblewrap.js';
import { mountsUnder } from '../../sandbox/layers.js';
import { Mounter } from '../../sandbox/mounter.js';
import { ProviderUnavailableError } from '../../sandbox/provider.js';
import { removeAllSandboxes, removeDirs, tempDir, writeTree } from './helpers.js';

const dirs: string[] = [];
let rootDir: string;
let workspace: string;
let sidecar: string;
let provider: BubblewrapProvider;
let n = 0;
const key = (): string => `shared-roots-${process.pid}-${n++}`;

beforeAll(async () => {
  rootDir = await tempDir('shared-roots');
  workspace = await tempDir('shared-roots-ws');
  sidecar = await tempDir('shared-roots-sidecar');
  dirs.push(rootDir, workspace, sidecar);
  await writeTree(workspace, { 'a.txt': 'a\n' });
  await chmod(sidecar, 0o755);
  provider = new BubblewrapProvider({ rootDir });
});

afterAll(async () => {
  await removeAllSandboxes(provider);
  await removeDirs(dirs);
});

describe('shared roots', () => {
  it('mounts one root per image and layout of mounts, and unmounts them on release', async () => {
    const roots = join(defaultMountRoot(rootDir), '.roots');
    const plain = { workspaceDir: workspace };
    const withSidecar = { ...plain, readOnlyMounts: [{ hostPath: sidecar, sandboxPath: '/opt/sidecar' }] };
    const made = await Promise.all([
      provider.create({ idempotencyKey: key(), ...plain }),
      provider.create({ idempotencyKey: key(), ...plain }),
      provider.create({ idempotencyKey: key(), ...withSidecar }),
      provider.create({ idempotencyKey: key(), ...withSidecar }),
    ]);
    expect(await readdir(roots)).toHaveLength(2);
    expect(await mountsUnder(roots)).toHaveLength(2);
    // Each sandbox still sees the mount points of its own layout only.
    const look = 'test -d /opt/sidecar && echo sidecar || echo none';
    const seen = await Promise.all(made.map((s) => provider.exec(s.id, { shell: look })));
    expect(seen.map((r) => r.stdout)).toEqual(['none\n', 'none\n', 'sidecar\n', 'sidecar\n']);
    for (const s of made) await provider.destroy(s.id);
    // Destroying the sandboxes leaves the roots for the next ones; release takes them down.
    expect(await mountsUnder(roots)).toHaveLength(2);
    await provider.release();
    expect(await mountsUnder(roots)).toEqual([]);
    expect(existsSync(defaultMountRoot(rootDir))).toBe(false);
    // Used again, the provider mounts what it needs afresh.
    const again = await provider.create({ idempotencyKey: key(), ...plain });
    expect((await provider.exec(again.id, ['cat', 'a.txt'])).stdout).toBe('a\n');
    await provider.destroy(again.id);
  });
});

describe('Mounter', () => {
  it('mounts and unmounts through its helper, and says when nothing was mounted', async () => {
    const mounter = new Mounter();
    const dir = await tempDir('mounter');
    dirs.push(dir);
    await mounter.mount('tmpfs', 'mounter-test', dir, ['nodev', 'nosuid'], 'size=1m');
    expect(await mountsUnder(dir)).toEqual([dir]);
    expect(await mounter.unmount(dir)).toBe(true);
    expect(await mounter.unmount(dir)).toBe(false);
    expect(await mounter.unmount(join(dir, 'missing'))).toBe(false);
    await expect(mounter.mount('no-such-fs', 'x', dir, [], '')).rejects.toBeInstanceOf(ProviderUnavailableError);
  });

  it('runs a batch in order, tolerating what it is told to, and names the operation that failed', async () => {
    const mounter = new Mounter();
    const dir = await tempDir('mounter-batch');
    dirs.push(dir);
    const owned = join(dir, 'owned');
    await mounter.run([
      { op: 'mkdir', path: owned, mode: 0o710, owner: { uid: 65534, gid: 65534 } },
      { op: 'mkdir', path: owned, mode: 0o700, tolerate: ['EEXIST'] },
    ]);
    const s = await stat(owned);
    expect([s.mode & 0o7777, s.uid, s.gid]).toEqual([0o710, 65534, 65534]);
    const failing = mounter.run([
      { op: 'rmdir', path: owned },
      { op: 'rmdir', path: owned },
      { op: 'mkdir', path: owned, mode: 0o700 },
    ]);
    await expect(failing).rejects.toMatchObject({ name: 'HostOpError', index: 1, code: 'ENOENT' });
    // The batch stopped there: the directory removed first was not made again.
    expect(existsSync(owned)).toBe(false);
  });
});
