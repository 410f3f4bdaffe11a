/**
 * The sandbox's root comes from its image (layers stacked, env as the base of every exec), and
 * its workspace from a prepared layer shared by the sandboxes of one workspace key.
 */
import { randomBytes } from 'node:crypto';
import { chmod, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BubblewrapProvider } from '../../sandbox/bubblewrap.js';
import { baseImageRoot } from '../../sandbox/images/base.js';
import { InvalidSandboxSpecError } from '../../sandbox/provider.js';
import { readTree, removeAllSandboxes, removeDirs, tempDir, UnpackedImageStore, writeTree } from './helpers.js';

const rand = randomBytes(6).toString('hex');
const dirs: string[] = [];
let rootDir: string;
let workspace: string;
let provider: BubblewrapProvider;
let n = 0;
const key = (): string => `image-root-${rand}-${n++}`;

beforeAll(async () => {
  rootDir = await tempDir('image-root');
  workspace = await tempDir('image-root-ws');
  const layer = await tempDir('image-root-layer');
  dirs.push(rootDir, workspace, layer);
  await writeTree(workspace, { 'src/app.py': 'print("v1")\n' });
  // What a SWE-bench image has: the repository at /testbed, and its own PATH and variables.
  await writeTree(layer, { 'testbed/stale.py': 'old\n', 'usr/local/bin/image-tool': 'echo image tool\n' });
  await chmod(join(layer, 'usr/local/bin/image-tool'), 0o755);
  const base = await baseImageRoot();
  provider = new BubblewrapProvider({
    rootDir,
    images: new UnpackedImageStore({
      'swe:1': {
        digest: `sha256:${rand}`,
        layers: [...base.layers, layer],
        env: { PATH: `/opt/image/bin:${base.env.PATH}`, IMAGE_VAR: 'from-image', HOME: '/root' },
      },
    }),
  });
});

afterAll(async () => {
  await removeAllSandboxes(provider);
  await removeDirs(dirs);
});

describe('image root', () => {
  it("stacks the image's layers and makes its env the base of every exec's", async () => {
    const s = await provider.create({ idempotencyKey: key(), image: 'swe:1', workspaceDir: workspace });
    const r = await provider.exec(s.id, { shell: 'image-tool; echo "$PATH|$IMAGE_VAR|$HOME|$EXTRA"; python3 -c "print(2)"' }, {
      env: { EXTRA: 'mine', IMAGE_VAR: 'overridden' },
    });
    // HOME stays the sandbox's writable /tmp: the image's root is read-only.
    expect(r.stdout).toBe(
      `image tool\n/opt/image/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin|overridden|/tmp|mine\n2\n`,
    );
    await provider.destroy(s.id);
  });

  it('links workspaceLink to /workspace, replacing what the image has there', async () => {
    const s = await provider.create({
      idempotencyKey: key(),
      image: 'swe:1',
      workspaceDir: workspace,
      workspaceLink: '/testbed',
    });
    const r = await provider.exec(s.id, { shell: 'readlink /testbed; ls /testbed; echo edit > /testbed/new.txt; cat /workspace/new.txt' }, {
      cwd: '/testbed',
    });
    expect(r.stdout).toBe('/workspace\nsrc\nedit\n');
    await provider.destroy(s.id);
    await expect(
      provider.create({ idempotencyKey: key(), workspaceDir: workspace, workspaceLink: '/workspace/x' }),
    ).rejects.toBeInstanceOf(InvalidSandboxSpecError);
  });

  it('refuses an image the store cannot have as an invalid spec', async () => {
    await expect(
      provider.create({ idempotencyKey: key(), image: 'no-such:image', workspaceDir: workspace }),
    ).rejects.toBeInstanceOf(InvalidSandboxSpecError);
    expect((await readdir(rootDir)).filter((e) => e.startsWith('sb-'))).toEqual([]);
  });

  it('mounts a read-only file at its own path', async () => {
    const file = join(await tempDir('image-root-file'), 'config.json');
    dirs.push(join(file, '..'));
    await chmod(join(file, '..'), 0o755);
    await writeFile(file, '{"a":1}', { mode: 0o644 });
    const s = await provider.create({
      idempotencyKey: key(),
      workspaceDir: workspace,
      readOnlyMounts: [{ hostPath: file, sandboxPath: '/etc/agent/config.json' }],
    });
    expect((await provider.exec(s.id, ['cat', '/etc/agent/config.json'])).stdout).toBe('{"a":1}');
    await provider.destroy(s.id);
  });
});

describe('shared workspace layers', () => {
  it('prepares a keyed workspace once and gives every sandbox its own copy-on-write view', async () => {
    const wsKey = `ws-${rand}`;
    const layers = join(rootDir, '.layers');
    const [a, b] = await Promise.all([
      provider.create({ idempotencyKey: key(), workspaceDir: workspace, workspaceKey: wsKey }),
      provider.create({ idempotencyKey: key(), workspaceDir: workspace, workspaceKey: wsKey }),
    ]);
    expect(await readdir(layers)).toHaveLength(1);
    const hostBefore = await readTree(workspace);
    await provider.exec(a!.id, { shell: 'echo changed > src/app.py && echo new > new.txt && git add -A' });
    expect((await provider.exec(b!.id, { shell: 'cat src/app.py; ls; git log --oneline | wc -l; git status --porcelain' })).stdout).toBe(
      'print("v1")\nsrc\n1\n',
    );
    expect((await provider.exec(a!.id, ['cat', 'src/app.py'])).stdout).toBe('changed\n');
    expect(await readTree(workspace)).toEqual(hostBefore);
    // Destroying a sandbox leaves the shared layer to the others.
    await provider.destroy(a!.id);
    expect((await provider.exec(b!.id, ['cat', 'src/app.py'])).stdout).toBe('print("v1")\n');
    await provider.destroy(b!.id);
    const c = await provider.create({ idempotencyKey: key(), workspaceDir: workspace, workspaceKey: wsKey });
    expect(await readdir(layers)).toHaveLength(1);
    // Another key, or the same key without a repository, is another layer.
    const d = await provider.create({ idempotencyKey: key(), workspaceDir: workspace, workspaceKey: wsKey, initGitRepo: false });
    expect((await provider.exec(d.id, { shell: 'ls -A' })).stdout).toBe('src\n');
    expect(await readdir(layers)).toHaveLength(2);
    for (const s of [c, d]) await provider.destroy(s.id);
  });
});
