import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BubblewrapProvider, defaultMountRoot } from '../../sandbox/bubblewrap.js';
import { rootKeyOf } from '../../sandbox/cgroups.js';
import { mountsUnder } from '../../sandbox/layers.js';
import { InvalidSandboxSpecError, SandboxPausedError } from '../../sandbox/provider.js';
import { readTree, removeAllSandboxes, removeDirs, tempDir, writeTree } from './helpers.js';

const MiB = 1024 * 1024;
const dirs: string[] = [];
let rootDir: string;
let workspace: string;
let provider: BubblewrapProvider;
let n = 0;
const key = (): string => `lifecycle-${process.pid}-${n++}`;

/** A control file of the sandbox's cgroup, for whichever hierarchy the provider uses. */
async function cgroupFile(id: string, controller: string, file: string, root = rootDir): Promise<string> {
  const rel = join('agent-rollout', rootKeyOf(root), id, file);
  const v1 = (await provider.resourceControl()) === 'cgroup-v1';
  return join('/sys/fs/cgroup', v1 ? controller : '', rel);
}

const until = async (check: () => Promise<boolean>): Promise<void> => {
  while (!(await check())) await new Promise((r) => setTimeout(r, 20));
};

beforeAll(async () => {
  rootDir = await tempDir('lifecycle');
  workspace = await tempDir('lifecycle-ws');
  dirs.push(rootDir, workspace);
  await writeTree(workspace, { 'a.txt': 'a\n' });
  provider = new BubblewrapProvider({ rootDir });
});

afterAll(async () => {
  await removeAllSandboxes(provider);
  await removeDirs(dirs);
});

describe('BubblewrapProvider limits and lifetimes', () => {
  it('puts every sandbox in its own cgroup with the limits of its spec', async () => {
    const kind = await provider.resourceControl();
    expect(['cgroup-v1', 'cgroup-v2']).toContain(kind);
    const info = await provider.create({
      idempotencyKey: key(),
      workspaceDir: workspace,
      limits: { memoryBytes: 100 * MiB, maxProcesses: 50, cpus: 0.5 },
    });
    const read = async (c: string, f: string) =>
      (await readFile(await cgroupFile(info.id, c, f), 'utf8')).trim();
    if (kind === 'cgroup-v1') {
      expect(await read('memory', 'memory.limit_in_bytes')).toBe(String(100 * MiB));
      expect(await read('cpu', 'cpu.cfs_quota_us')).toBe('50000');
    } else {
      expect(await read('memory', 'memory.max')).toBe(String(100 * MiB));
      expect(await read('cpu', 'cpu.max')).toBe('50000 100000');
    }
    expect(await read('pids', 'pids.max')).toBe('50');
    // Its commands run in it, and see it as their cgroup namespace's root.
    const r = await provider.exec(info.id, ['cat', '/proc/self/cgroup']);
    expect(
      r.stdout
        .trim()
        .split('\n')
        .every((line) => line.endsWith(':/')),
    ).toBe(true);
    const running = provider.exec(info.id, ['sleep', '30']).catch((e: unknown) => e);
    const procs = await cgroupFile(info.id, 'pids', 'cgroup.procs');
    await until(async () => (await readFile(procs, 'utf8')).trim() !== '');
    await provider.destroy(info.id);
    expect(await running).toBeInstanceOf(Error);
    expect(existsSync(await cgroupFile(info.id, 'pids', ''))).toBe(false);
  });

  it('refuses limits that cannot work', async () => {
    for (const limits of [{ cpus: 0 }, { memoryBytes: -1 }, { diskBytes: Number.NaN }]) {
      await expect(
        provider.create({ idempotencyKey: key(), workspaceDir: workspace, limits }),
      ).rejects.toBeInstanceOf(InvalidSandboxSpecError);
    }
  });

  it('pauses and resumes every process of a sandbox', async () => {
    const info = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
    const counter = join(provider.tmpHostDir(info.id), 'count');
    const loop = provider
      .exec(
        info.id,
        { shell: 'i=0; while :; do i=$((i+1)); echo $i > /tmp/count; sleep 0.02; done' },
        { timeoutMs: 60_000 },
      )
      .catch((e: unknown) => e);
    await until(async () => existsSync(counter));
    await provider.pause(info.id);
    expect(await provider.status(info.id)).toBe('paused');
    await expect(provider.exec(info.id, ['true'])).rejects.toBeInstanceOf(SandboxPausedError);
    const kind = await provider.resourceControl();
    const frozen =
      kind === 'cgroup-v1'
        ? (await readFile(await cgroupFile(info.id, 'freezer', 'freezer.state'), 'utf8')).trim() ===
          'FROZEN'
        : (await readFile(await cgroupFile(info.id, '', 'cgroup.events'), 'utf8')).includes(
            'frozen 1',
          );
    expect(frozen).toBe(true);

    await provider.resume(info.id);
    expect(await provider.status(info.id)).toBe('running');
    const before = await readFile(counter, 'utf8');
    await until(async () => (await readFile(counter, 'utf8')) !== before);
    // Destroying a paused sandbox thaws it so its processes can die.
    await provider.pause(info.id);
    await provider.destroy(info.id);
    expect(await loop).toBeInstanceOf(Error);
    expect(await provider.status(info.id)).toBe('gone');
  });

  it('uploads and downloads tar archives of the workspace', async () => {
    const src = await tempDir('tar-src');
    const out = await tempDir('tar-out');
    dirs.push(src, out);
    await writeTree(src, { 'pkg/mod.py': 'x = 1\n', 'data/blob.bin': '\u0000\u0001binary' });
    const tar = execFileSync('tar', ['-c', '-C', src, '.']);
    const info = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
    await provider.upload(info.id, tar, 'vendor');
    expect((await provider.exec(info.id, ['cat', 'vendor/pkg/mod.py'])).stdout).toBe('x = 1\n');
    expect(
      (await provider.exec(info.id, ['stat', '-c', '%u', 'vendor/pkg/mod.py'])).stdout,
    ).not.toBe('0\n');

    execFileSync('tar', ['-x', '-C', out], { input: await provider.download(info.id) });
    const tree = await readTree(out);
    expect(tree['a.txt']).toBe('a\n');
    expect(tree['vendor/pkg/mod.py']).toBe('x = 1\n');
    expect(tree['vendor/data/blob.bin']).toBe('\u0000\u0001binary');
    await provider.destroy(info.id);
  });

  it('ends a command when its sandbox reaches its TTL', async () => {
    const info = await provider.create({
      idempotencyKey: key(),
      workspaceDir: workspace,
      ttlMs: 1_000,
    });
    const r = await provider.exec(info.id, ['sleep', '30'], { timeoutMs: 60_000 });
    expect(r.timedOut).toBe(true);
  });

  it('sweeps cgroups and mounts a crashed provider left without a sandbox directory', async () => {
    const info = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
    const mountDir = join(defaultMountRoot(rootDir), info.id);
    // As if the host crashed while removing it: its record is gone, its mounts and cgroup are not.
    await rm(join(rootDir, info.id), { recursive: true, force: true });
    expect(await mountsUnder(mountDir)).toHaveLength(2); // tmpfs, workspace
    expect(existsSync(await cgroupFile(info.id, 'pids', ''))).toBe(true);
    await provider.sweepExpired();
    expect(await mountsUnder(mountDir)).toEqual([]);
    expect(existsSync(mountDir)).toBe(false);
    expect(existsSync(await cgroupFile(info.id, 'pids', ''))).toBe(false);
  });

  it("sweeps the sandboxes of a provider whose data dir was deleted under them", async () => {
    const goneRoot = await tempDir('gone-root');
    const gone = new BubblewrapProvider({ rootDir: goneRoot });
    const info = await gone.create({ idempotencyKey: key(), workspaceDir: workspace });
    const goneMounts = defaultMountRoot(goneRoot);
    await rm(goneRoot, { recursive: true, force: true });
    expect(await mountsUnder(join(goneMounts, info.id))).toHaveLength(2);
    // Another provider's periodic sweep (the janitor's) finds the abandoned mount root.
    await provider.sweepExpired();
    expect(await mountsUnder(join(goneMounts, info.id))).toEqual([]);
    expect(existsSync(goneMounts)).toBe(false);
    expect(existsSync(await cgroupFile(info.id, 'pids', '', goneRoot))).toBe(false);
    expect(existsSync(goneRoot)).toBe(false);
  });

  it('counts what a sandbox writes against its disk cap', async () => {
    const info = await provider.create({
      idempotencyKey: key(),
      workspaceDir: workspace,
      limits: { diskBytes: 16 * MiB },
    });
    const before = (await provider.usage(info.id)).diskBytes!;
    await provider.exec(info.id, {
      shell: 'head -c 4194304 /dev/zero > big; head -c 4194304 /dev/zero > /tmp/big',
    });
    const after = await provider.usage(info.id);
    expect(after.diskBytes! - before).toBeGreaterThanOrEqual(8 * MiB);
    expect(after.memoryBytes).toBeGreaterThan(0);
    // The host's copy of the task is untouched: writes went to the sandbox's layer.
    expect(existsSync(join(workspace, 'big'))).toBe(false);
    await provider.destroy(info.id);
  });
});
