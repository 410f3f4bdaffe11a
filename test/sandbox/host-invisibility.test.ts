/**
 * Nothing of the host reaches a sandbox but what is bound into it on purpose: its root is the
 * image, its workspace and /tmp its own layers, and the one host directory it sees the sidecar.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, realpath, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalSandboxProvider } from '../../sandbox/local-provider.js';
import { baseImageRoot } from '../../sandbox/images/base.js';
import type { ImageRoot } from '../../sandbox/images/types.js';
import type { SandboxInfo } from '../../sandbox/provider.js';
import { removeAllSandboxes, removeDirs, tempDir, UnpackedImageStore, writeTree } from './helpers.js';
import { PROVIDER_FACTORIES } from '../attacks/providers.js';

const rand = randomBytes(6).toString('hex');
const plantedDir = `/var/lib/agent-rollout-planted-${rand}`;
const plantedFile = `/opt/agent-rollout-planted-${rand}`;
const hostname = `image-host-${rand}`;
const dirs: string[] = [];
let dataDir: string;
let image: ImageRoot;
let provider: LocalSandboxProvider;
let sandbox: SandboxInfo;

/** Filesystems that hold no host files: whatever else is mounted in the sandbox comes from the host's disks. */
const VIRTUAL_FS = new Set(['overlay', 'tmpfs', 'proc', 'devpts', 'mqueue']);

const sh = async (script: string): Promise<string> => {
  const r = await provider.exec(sandbox.id, { shell: script });
  return r.stdout;
};

describe.each(PROVIDER_FACTORIES)('host invisibility ($name)', (factory) => {
  beforeAll(async () => {
    dataDir = await tempDir('invisible-data');
    const layer = await tempDir('invisible-layer');
    const sidecar = await tempDir('invisible-sidecar');
    const workspace = await tempDir('invisible-ws');
    dirs.push(dataDir, layer, sidecar, workspace, plantedDir, plantedFile);
    // World-readable, outside the data dir, the project and the task folder: only the image root can hide them.
    await mkdir(plantedDir, { mode: 0o755 });
    await writeFile(join(plantedDir, 'secret'), 'planted secret\n', { mode: 0o644 });
    await writeFile(plantedFile, 'planted secret\n', { mode: 0o644 });
    await writeTree(dataDir, { 'gateway/keys.json': '{"key":"secret"}' });
    await writeTree(layer, { 'etc/hostname': `${hostname}\n` });
    await writeTree(sidecar, { 'bin/agent': 'echo agent\n' });
    await writeTree(workspace, { 'app.py': 'print(1)\n' });
    // The sidecar is installed readable by everyone; the sandbox runs as an unprivileged user.
    for (const d of [sidecar, join(sidecar, 'bin')]) await chmod(d, 0o755);
    const base = await baseImageRoot();
    image = { digest: `test-${rand}`, layers: [...base.layers, layer], env: { ...base.env } };
    provider = factory.make({
      rootDir: join(dataDir, 'sandboxes'),
      images: new UnpackedImageStore({ 'test-image': image }),
    });
    sandbox = await provider.create({
      idempotencyKey: `invisible-${rand}`,
      image: 'test-image',
      workspaceDir: workspace,
      readOnlyMounts: [{ hostPath: sidecar, sandboxPath: '/opt/agents' }],
    });
  });

  afterAll(async () => {
    await removeAllSandboxes(provider);
    await removeDirs(dirs);
  });

  it('does not show a file planted on the host outside every known path', async () => {
    const out = await sh(
      `cat ${plantedDir}/secret 2>/dev/null || echo unreadable; cat ${plantedFile} 2>/dev/null || echo unreadable; ls /var/lib | grep -c planted`,
    );
    expect(out).toBe('unreadable\nunreadable\n0\n');
  });

  it("lists at / only the image's entries and the sandbox's mount points", async () => {
    const expected = new Set(['workspace']);
    for (const layer of image.layers) for (const e of await readdir(layer)) expected.add(e);
    const listed = (await sh('ls -A /')).trim().split('\n');
    expect(listed.sort()).toEqual([...expected].sort());
    // The host's top level holds more than the image's (this checkout's /work, say): none of it shows.
    const hostOnly = (await readdir('/')).filter((e) => !expected.has(e));
    expect(hostOnly.length).toBeGreaterThan(0);
    expect(listed.filter((e) => hostOnly.includes(e))).toEqual([]);
  });

  it("has the image's /etc/hostname and /etc/passwd, not the host's", async () => {
    expect(await sh('cat /etc/hostname')).toBe(`${hostname}\n`);
    const passwd = await sh('cat /etc/passwd');
    expect(passwd).toBe(await readFile(join(image.layers[0]!, 'etc/passwd'), 'utf8'));
    expect(passwd).not.toBe(await readFile('/etc/passwd', 'utf8'));
  });

  it('has neither the project checkout, nor the data dir, nor /work', async () => {
    const paths = [process.cwd(), await realpath(process.cwd()), '/work', dataDir, join(dataDir, 'sandboxes')];
    const out = await sh(paths.map((p) => `test -e ${p} && echo "present ${p}" || echo absent`).join('; '));
    expect(out).toBe('absent\n'.repeat(paths.length));
  });

  it('binds no host directory but the sidecar', async () => {
    const mounts = (await sh('cat /proc/self/mountinfo'))
      .trim()
      .split('\n')
      .map((line) => {
        const [before, after] = line.split(' - ');
        return { point: before!.split(' ')[4]!, fs: after!.split(' ')[0]! };
      });
    // Device nodes (/dev/null and the like) are bound from the host's devtmpfs: files, not data.
    if (factory.name === 'gvisor') {
      // Every host path reaches the Sentry through its Gofer (9p): the image root, the
      // sandbox's own layers, gVisor's statx shim, and the sidecar; nothing else.
      const fromHost = mounts.filter((m) => m.fs === '9p').map((m) => m.point);
      expect(fromHost.sort()).toEqual(['/', '/dev/.agent-rollout-statx-shim.so', '/opt/agents', '/tmp', '/workspace']);
      expect(await sh('sh /opt/agents/bin/agent')).toBe('agent\n');
      return;
    }
    const fromHostDisks = mounts.filter((m) => !VIRTUAL_FS.has(m.fs) && m.fs !== 'devtmpfs');
    expect(fromHostDisks.map((m) => m.point)).toEqual(['/opt/agents']);
    expect(mounts.filter((m) => m.fs === 'devtmpfs').every((m) => m.point.startsWith('/dev/'))).toBe(true);
    expect(await sh('sh /opt/agents/bin/agent')).toBe('agent\n');
  });
});
