import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BubblewrapProvider, defaultMountRoot } from '../../sandbox/bubblewrap.js';
import {
  InvalidSandboxSpecError,
  ProviderUnavailableError,
  SandboxGoneError,
  SandboxQuotaError,
} from '../../sandbox/provider.js';
import { SandboxFileError } from '../../sandbox/files.js';
import {
  git,
  hostProcessesMatching,
  readTree,
  removeAllSandboxes,
  removeDirs,
  tempDir,
  writeTree,
} from './helpers.js';

const dirs: string[] = [];
let rootDir: string;
let hiddenDir: string;
let hiddenFile: string;
let workspace: string;
let provider: BubblewrapProvider;
let keyCounter = 0;
const key = (): string => `test-${process.pid}-${keyCounter++}`;

beforeAll(async () => {
  rootDir = await tempDir('root');
  hiddenDir = await tempDir('hidden');
  workspace = await tempDir('ws');
  dirs.push(rootDir, hiddenDir, workspace);
  await writeTree(hiddenDir, { 'gold.patch': 'the answer', 'nested/secret.txt': 'secret' });
  hiddenFile = join(await tempDir('hidden-file'), 'token.txt');
  dirs.push(join(hiddenFile, '..'));
  await writeFile(hiddenFile, 'token');
  // A repository with history, a tag, another branch and a remote: none of it may reach the sandbox.
  await writeTree(workspace, { 'src/app.py': 'print("v1")\n', 'README.md': 'hello\n' });
  git(workspace, 'init', '-q', '-b', 'main');
  git(workspace, 'add', '-A');
  git(workspace, 'commit', '-q', '-m', 'one');
  git(workspace, 'tag', 'v1');
  git(workspace, 'branch', 'fix-branch');
  git(workspace, 'remote', 'add', 'origin', 'https://example.invalid/repo.git');
  await writeTree(workspace, { 'src/app.py': 'print("v2")\n' });
  git(workspace, 'commit', '-q', '-am', 'two');
  provider = new BubblewrapProvider({ rootDir, hiddenPaths: [hiddenDir, hiddenFile] });
});

/** Providers with their own root, swept at the end. */
const others: BubblewrapProvider[] = [];

afterAll(async () => {
  for (const p of [provider, ...others]) await removeAllSandboxes(p);
  await removeDirs(dirs);
});

describe('BubblewrapProvider', () => {
  it('creates, runs a command and destroys', async () => {
    const info = await provider.create({
      idempotencyKey: key(),
      workspaceDir: workspace,
      labels: { role: 'agent' },
    });
    expect(info.id).toMatch(/^sb-[0-9a-f]{16}$/);
    expect(info.labels).toEqual({ role: 'agent' });
    expect(await provider.status(info.id)).toBe('running');

    const r = await provider.exec(info.id, { shell: 'pwd; cat src/app.py; echo oops >&2; exit 3' });
    expect(r).toMatchObject({ exitCode: 3, timedOut: false, truncated: false });
    expect(r.stdout).toBe('/workspace\nprint("v2")\n');
    expect(r.stderr).toBe('oops\n');

    await provider.destroy(info.id);
    expect(await provider.status(info.id)).toBe('gone');
    expect(await readdir(rootDir)).not.toContain(info.id);
  });

  it('runs argv without a shell, with stdin, cwd and env, and a clean environment', async () => {
    process.env.AGENT_ROLLOUT_HOST_ONLY = 'leak';
    const info = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
    const cat = await provider.exec(info.id, ['cat'], { stdin: 'from stdin $HOME' });
    expect(cat.stdout).toBe('from stdin $HOME');
    const env = await provider.exec(info.id, ['env'], { cwd: 'src', env: { EXTRA: 'yes' } });
    const vars = Object.fromEntries(
      env.stdout
        .trim()
        .split('\n')
        .map((l) => l.split('=', 2) as [string, string]),
    );
    expect(vars).toMatchObject({
      HOME: '/tmp',
      LANG: 'C.UTF-8',
      EXTRA: 'yes',
      PWD: '/workspace/src',
    });
    expect(vars.AGENT_ROLLOUT_HOST_ONLY).toBeUndefined();
    delete process.env.AGENT_ROLLOUT_HOST_ONLY;
    // A missing command or directory is the command's failure, not the provider's.
    expect((await provider.exec(info.id, ['no-such-command'])).exitCode).toBe(127);
    expect((await provider.exec(info.id, ['true'], { cwd: '/no/such/dir' })).exitCode).not.toBe(0);
    await provider.destroy(info.id);
  });

  it('keeps /tmp (and so HOME) from one exec to the next', async () => {
    const info = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
    await provider.exec(info.id, { shell: 'echo remembered > ~/note' });
    expect((await provider.exec(info.id, ['cat', '/tmp/note'])).stdout).toBe('remembered\n');
    await provider.destroy(info.id);
  });

  it('returns the same sandbox for a retried create, even concurrently', async () => {
    const k = key();
    const sandboxDirs = async (): Promise<number> =>
      (await readdir(rootDir)).filter((e) => e.startsWith('sb-')).length;
    const before = await sandboxDirs();
    const [a, b, c] = await Promise.all(
      [1, 2, 3].map(() => provider.create({ idempotencyKey: k, workspaceDir: workspace })),
    );
    await provider.exec(a!.id, { shell: 'echo mine > mark' });
    const again = await provider.create({ idempotencyKey: k, workspaceDir: workspace });
    expect(new Set([a!.id, b!.id, c!.id, again.id]).size).toBe(1);
    expect(again.createdAt).toBe(a!.createdAt);
    expect((await provider.exec(again.id, ['cat', 'mark'])).stdout).toBe('mine\n');
    expect(await sandboxDirs()).toBe(before + 1);
    await provider.destroy(a!.id);
  });

  it('gives each sandbox a private copy of the workspace', async () => {
    const hostBefore = await readTree(workspace);
    const info = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
    await provider.exec(info.id, {
      shell: 'echo changed > src/app.py && rm README.md && echo new > new.txt',
    });
    await provider.writeFile(info.id, 'written.txt', 'via writeFile');
    expect(await readTree(workspace)).toEqual(hostBefore);
    expect((await provider.exec(info.id, ['cat', 'src/app.py'])).stdout).toBe('changed\n');
    await provider.destroy(info.id);
  });

  it('makes the workspace a fresh single-commit repository', async () => {
    const oldHead = git(workspace, 'rev-parse', 'HEAD').trim();
    const info = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
    const r = await provider.exec(info.id, {
      shell: [
        'echo "commits=$(git log --oneline --all | wc -l)"',
        'echo "remotes=$(git remote | wc -l)"',
        'echo "tags=$(git tag | wc -l)"',
        'echo "branches=$(git branch -a | wc -l)"',
        'echo "reflog=$(git reflog 2>/dev/null | wc -l)"',
        `git cat-file -e ${oldHead} 2>/dev/null && echo "old-commit=present" || echo "old-commit=absent"`,
        'echo "status=$(git status --porcelain | wc -l)"',
        'cat src/app.py',
      ].join('\n'),
    });
    expect(r.stdout).toBe(
      'commits=1\nremotes=0\ntags=0\nbranches=1\nreflog=0\nold-commit=absent\nstatus=0\nprint("v2")\n',
    );
    await provider.destroy(info.id);
  });

  it('leaves the workspace alone with initGitRepo: false', async () => {
    const plain = await tempDir('plain');
    dirs.push(plain);
    await writeTree(plain, { 'a.txt': 'a' });
    const info = await provider.create({
      idempotencyKey: key(),
      workspaceDir: plain,
      initGitRepo: false,
    });
    expect((await provider.exec(info.id, { shell: 'ls -A' })).stdout).toBe('a.txt\n');
    await provider.destroy(info.id);
  });

  it('has no network: a port listening on the host loopback is unreachable', async () => {
    const server: Server = createServer((s) => s.end('hello from host\n'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      const info = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
      const connect = `import socket
try:
    s = socket.create_connection(("127.0.0.1", ${port}), timeout=5)
    print("connected", s.recv(100))
except OSError as e:
    print("refused", type(e).__name__)`;
      const r = await provider.exec(info.id, ['python3', '-c', connect]);
      expect(r.stdout).toBe('refused ConnectionRefusedError\n');
      // Only a loopback interface exists.
      const ifaces = await provider.exec(info.id, {
        shell: "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '",
      });
      expect(ifaces.stdout).toBe('lo\n');
      await provider.destroy(info.id);
    } finally {
      server.close();
    }
  });

  it('shows none of the hidden paths, the sandbox root or other sandboxes', async () => {
    const a = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
    const b = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
    await provider.exec(a.id, { shell: 'echo private-to-a > only-a.txt' });
    const r = await provider.exec(b.id, {
      shell: [
        `ls -A ${hiddenDir} | wc -l`,
        `t=$(cat ${hiddenFile} 2>/dev/null); echo "token=[$t]"`,
        `ls -A ${rootDir} | wc -l`,
        `ls -A ${defaultMountRoot(rootDir)} | wc -l`,
        `cat ${join(defaultMountRoot(rootDir), a.id, 'workspace', 'only-a.txt')} 2>/dev/null || echo unreachable`,
      ].join('\n'),
    });
    expect(r.stdout).toBe('0\ntoken=[]\n0\n0\nunreachable\n');
    // The host still has them.
    expect(await readFile(join(hiddenDir, 'gold.patch'), 'utf8')).toBe('the answer');
    await provider.destroy(a.id);
    await provider.destroy(b.id);
  });

  it("hides a sandbox's own hidden paths inside its mounts from it alone, and refuses to hide the root", async () => {
    const shared = await tempDir('shared');
    dirs.push(shared);
    await writeTree(shared, { 'pack/tasks.jsonl': '{"patch": "the fix"}\n', 'tool.sh': 'echo tool\n' });
    // Readable by the sandbox user, so only the mask can keep it from the agent's sandbox.
    await chmod(shared, 0o755);
    await chmod(join(shared, 'pack'), 0o755);
    const readOnlyMounts = [{ hostPath: shared, sandboxPath: '/opt/shared' }];
    const agent = await provider.create({
      idempotencyKey: key(),
      workspaceDir: workspace,
      readOnlyMounts,
      hiddenPaths: [join(shared, 'pack')],
    });
    const other = await provider.create({ idempotencyKey: key(), workspaceDir: workspace, readOnlyMounts });
    const look = 'cat /opt/shared/tool.sh; ls -A /opt/shared/pack | wc -l; cat /opt/shared/pack/tasks.jsonl 2>/dev/null || echo unreadable';
    expect((await provider.exec(agent.id, { shell: look })).stdout).toBe('echo tool\n0\nunreadable\n');
    expect((await provider.exec(other.id, { shell: look })).stdout).toBe('echo tool\n1\n{"patch": "the fix"}\n');
    await expect(provider.create({ idempotencyKey: key(), workspaceDir: workspace, hiddenPaths: ['/'] })).rejects.toBeInstanceOf(
      InvalidSandboxSpecError,
    );
    await provider.destroy(agent.id);
    await provider.destroy(other.id);
  });

  it('shows the image root read-only and read-only mounts read-only', async () => {
    const sidecar = await tempDir('sidecar');
    dirs.push(sidecar);
    await writeTree(sidecar, { 'tool.sh': 'echo tool' });
    // Sidecars are installed readable by everyone; the sandbox runs as an unprivileged user.
    await chmod(sidecar, 0o755);
    const info = await provider.create({
      idempotencyKey: key(),
      workspaceDir: workspace,
      readOnlyMounts: [{ hostPath: sidecar, sandboxPath: '/opt/agent-rollout/sidecar' }],
    });
    const r = await provider.exec(info.id, {
      shell: [
        'sh /opt/agent-rollout/sidecar/tool.sh',
        'touch /opt/agent-rollout/sidecar/x 2>/dev/null && echo sidecar-writable || echo sidecar-ro',
        'touch /usr/x 2>/dev/null && echo usr-writable || echo usr-ro',
        `touch ${sidecar}/y 2>/dev/null && echo host-writable || echo host-ro`,
      ].join('\n'),
    });
    expect(r.stdout).toBe('tool\nsidecar-ro\nusr-ro\nhost-ro\n');
    await provider.destroy(info.id);
  });

  it('kills the whole process tree on timeout', async () => {
    const info = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
    const tag = `${4000 + (process.pid % 1000)}${Date.now() % 100000}`;
    const r = await provider.exec(
      info.id,
      {
        shell: `sleep ${tag}1 & (sleep ${tag}2 >/dev/null 2>&1 </dev/null &) ; setsid sleep ${tag}3 >/dev/null 2>&1 & echo started; sleep ${tag}4`,
      },
      { timeoutMs: 500 },
    );
    expect(r.timedOut).toBe(true);
    expect(r.stdout).toBe('started\n');
    expect(await hostProcessesMatching(`sleep ${tag}`)).toEqual([]);
    await provider.destroy(info.id);
  });

  it('leaves nothing behind when the command exits with background processes running', async () => {
    const info = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
    const tag = `${5000 + (process.pid % 1000)}${Date.now() % 100000}`;
    const r = await provider.exec(info.id, {
      shell: `setsid sleep ${tag} >/dev/null 2>&1 & echo done`,
    });
    expect(r).toMatchObject({ exitCode: 0, timedOut: false, stdout: 'done\n' });
    expect(await hostProcessesMatching(`sleep ${tag}`)).toEqual([]);
    await provider.destroy(info.id);
  });

  it('caps each output stream and says so', async () => {
    const info = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
    const r = await provider.exec(
      info.id,
      { shell: "head -c 100000 /dev/zero | tr '\\0' a; head -c 10 /dev/zero | tr '\\0' b >&2" },
      { maxOutputBytes: 1000 },
    );
    expect(r.stdout).toBe('a'.repeat(1000));
    expect(r.stderr).toBe('b'.repeat(10));
    expect(r.truncated).toBe(true);
    expect(r.exitCode).toBe(0);
    const small = await provider.exec(info.id, ['echo', 'hi'], { maxOutputBytes: 1000 });
    expect(small.truncated).toBe(false);
    await provider.destroy(info.id);
  });

  it('reads and writes files in the workspace, binary included', async () => {
    const info = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
    const data = randomBytes(100_000);
    await provider.writeFile(info.id, 'deep/new/dir/blob.bin', data);
    expect(
      (await provider.readFile(info.id, '/workspace/deep/new/dir/blob.bin')).equals(data),
    ).toBe(true);
    await provider.writeFile(info.id, 'src/app.py', 'print("édité")\n');
    expect((await provider.exec(info.id, ['cat', 'src/app.py'])).stdout).toBe('print("édité")\n');
    expect((await provider.readFile(info.id, 'src/app.py')).toString()).toBe('print("édité")\n');
    await expect(provider.readFile(info.id, 'missing.txt')).rejects.toBeInstanceOf(
      SandboxFileError,
    );
    await expect(provider.readFile(info.id, 'src')).rejects.toBeInstanceOf(SandboxFileError);
    await provider.destroy(info.id);
  });

  it('refuses file paths and symlinks that lead out of /workspace', async () => {
    const info = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
    const ws = join(defaultMountRoot(rootDir), info.id, 'workspace');
    await symlink('/etc', join(ws, 'etc-link'));
    // Exists inside (the image's), so it is the path check that refuses, not a missing file.
    await symlink('/etc/hostname', join(ws, 'victim-link'));
    await symlink(join(hiddenDir, 'gold.patch'), join(ws, 'gold-link'));

    for (const path of ['../etc/passwd', '/etc/passwd', 'etc-link/passwd', 'victim-link']) {
      await expect(provider.readFile(info.id, path), path).rejects.toBeInstanceOf(
        InvalidSandboxSpecError,
      );
    }
    // Inside, the host's directory does not exist: the link leads nowhere.
    await expect(provider.readFile(info.id, 'gold-link')).rejects.toBeInstanceOf(SandboxFileError);
    for (const path of ['/tmp/x', 'etc-link/evil', 'victim-link', '/workspace/../etc/x']) {
      await expect(provider.writeFile(info.id, path, 'pwned'), path).rejects.toBeInstanceOf(
        InvalidSandboxSpecError,
      );
    }
    await provider.destroy(info.id);
  });

  it('throws SandboxGoneError after destroy, and destroy is idempotent', async () => {
    const info = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
    await provider.destroy(info.id);
    await provider.destroy(info.id);
    await provider.destroy('sb-0000000000000000');
    await provider.destroy('not-an-id/../..');
    await expect(provider.exec(info.id, ['true'])).rejects.toBeInstanceOf(SandboxGoneError);
    await expect(provider.exec('../../etc', ['true'])).rejects.toBeInstanceOf(SandboxGoneError);
    await expect(provider.extendTtl(info.id, 1000)).rejects.toBeInstanceOf(SandboxGoneError);
    expect(await provider.status(info.id)).toBe('gone');
    expect(await provider.status('garbage')).toBe('gone');
  });

  it('kills running commands when the sandbox is destroyed', async () => {
    const info = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
    const tag = `${6000 + (process.pid % 1000)}${Date.now() % 100000}`;
    const running = provider
      .exec(info.id, { shell: `echo started; exec sleep ${tag}` }, { timeoutMs: 600_000 })
      .catch((err: unknown) => err);
    // Wait until the command is really running before destroying.
    while (
      !(await hostProcessesMatching(`sleep ${tag}`)).some((p) => p.endsWith(`: sleep ${tag}`))
    ) {
      await new Promise((r) => setTimeout(r, 10));
    }
    await provider.destroy(info.id);
    expect(await running).toBeInstanceOf(SandboxGoneError);
    expect(await hostProcessesMatching(`sleep ${tag}`)).toEqual([]);
  });

  it('treats a sandbox past its TTL as gone, and extendTtl keeps one alive', async () => {
    const info = await provider.create({
      idempotencyKey: key(),
      workspaceDir: workspace,
      ttlMs: 50,
    });
    const kept = await provider.create({
      idempotencyKey: key(),
      workspaceDir: workspace,
      ttlMs: 50,
    });
    await provider.extendTtl(kept.id, 3_600_000);
    await provider.extendTtl(kept.id, 1000); // never shortens
    while (Date.now() <= info.expiresAt) await new Promise((r) => setTimeout(r, 10));
    expect(await provider.status(info.id)).toBe('gone');
    await expect(provider.exec(info.id, ['true'])).rejects.toBeInstanceOf(SandboxGoneError);
    expect(await provider.status(kept.id)).toBe('running');
    const listed = (await provider.list()).find((i) => i.id === kept.id);
    expect(listed!.expiresAt).toBeGreaterThan(Date.now() + 3_000_000);
    await provider.destroy(info.id);
    await provider.destroy(kept.id);
  });

  it('lists sandboxes by label', async () => {
    const a = await provider.create({
      idempotencyKey: key(),
      workspaceDir: workspace,
      labels: { batch: 'b1', role: 'agent' },
    });
    const b = await provider.create({
      idempotencyKey: key(),
      workspaceDir: workspace,
      labels: { batch: 'b1', role: 'reward' },
    });
    const c = await provider.create({
      idempotencyKey: key(),
      workspaceDir: workspace,
      labels: { batch: 'b2' },
    });
    expect((await provider.list({ batch: 'b1' })).map((i) => i.id).sort()).toEqual(
      [a.id, b.id].sort(),
    );
    expect((await provider.list({ batch: 'b1', role: 'reward' })).map((i) => i.id)).toEqual([b.id]);
    expect((await provider.list()).map((i) => i.id)).toEqual(
      expect.arrayContaining([a.id, b.id, c.id]),
    );
    for (const i of [a, b, c]) await provider.destroy(i.id);
  });

  it('rejects invalid specs', async () => {
    await expect(
      provider.create({ idempotencyKey: key(), workspaceDir: '/no/such/dir' }),
    ).rejects.toBeInstanceOf(InvalidSandboxSpecError);
    await expect(
      provider.create({ idempotencyKey: '', workspaceDir: workspace }),
    ).rejects.toBeInstanceOf(InvalidSandboxSpecError);
    for (const sandboxPath of ['relative', '/proc/x', '/workspace/sidecar', '/', '/opt/../etc']) {
      await expect(
        provider.create({
          idempotencyKey: key(),
          workspaceDir: workspace,
          readOnlyMounts: [{ hostPath: workspace, sandboxPath }],
        }),
        sandboxPath,
      ).rejects.toBeInstanceOf(InvalidSandboxSpecError);
    }
    await expect(
      provider.create({
        idempotencyKey: key(),
        workspaceDir: workspace,
        readOnlyMounts: [{ hostPath: '/no/such/source', sandboxPath: '/opt/x' }],
      }),
    ).rejects.toBeInstanceOf(InvalidSandboxSpecError);
  });

  it('throws ProviderUnavailableError when bwrap cannot run', async () => {
    const broken = new BubblewrapProvider({ rootDir, bwrapPath: '/no/such/bwrap' });
    const info = await broken.create({ idempotencyKey: key(), workspaceDir: workspace });
    await expect(broken.exec(info.id, ['true'])).rejects.toBeInstanceOf(ProviderUnavailableError);
    await broken.destroy(info.id);
  });
});

describe('BubblewrapProvider housekeeping', () => {
  it('refuses creates beyond maxSandboxes', async () => {
    const root = await tempDir('quota');
    dirs.push(root);
    const small = new BubblewrapProvider({ rootDir: root, maxSandboxes: 2 });
    others.push(small);
    const aKey = key();
    const a = await small.create({ idempotencyKey: aKey, workspaceDir: workspace });
    await small.create({ idempotencyKey: key(), workspaceDir: workspace });
    await expect(
      small.create({ idempotencyKey: key(), workspaceDir: workspace }),
    ).rejects.toBeInstanceOf(SandboxQuotaError);
    // A retry of an existing sandbox is not a new one.
    expect((await small.create({ idempotencyKey: aKey, workspaceDir: workspace })).id).toBe(a.id);
    await small.destroy(a.id);
    await small.create({ idempotencyKey: key(), workspaceDir: workspace });
    expect((await readdir(root)).filter((e) => e.startsWith('sb-')).length).toBe(2);
  });

  it('sweeps expired and half-made sandboxes, killing their commands', async () => {
    const root = await tempDir('sweep');
    dirs.push(root);
    const p = new BubblewrapProvider({ rootDir: root });
    others.push(p);
    const expiring = await p.create({
      idempotencyKey: key(),
      workspaceDir: workspace,
      ttlMs: 3_600_000,
    });
    const kept = await p.create({
      idempotencyKey: key(),
      workspaceDir: workspace,
      ttlMs: 3_600_000,
    });
    await p.extendTtl(kept.id, 5 * 3_600_000);
    // A create that died before writing meta.json.
    const halfMade = 'sb-00000000000000aa';
    await mkdir(join(root, halfMade, 'workspace'), { recursive: true });
    const running = p
      .exec(expiring.id, ['sleep', '600'], { timeoutMs: 600_000 })
      .catch((err: unknown) => err);

    expect(await p.sweepExpired()).toEqual([]); // nothing is due yet; the half-made one is too fresh
    const removed = await p.sweepExpired(Date.now() + 2 * 3_600_000);
    expect(removed.sort()).toEqual([expiring.id, halfMade].sort());
    expect(await running).toBeInstanceOf(SandboxGoneError);
    expect((await readdir(root)).filter((e) => e.startsWith('sb-'))).toEqual([kept.id]);
    expect(await p.status(kept.id)).toBe('running');
  });

  it('redoes a half-made sandbox on create', async () => {
    const root = await tempDir('redo');
    dirs.push(root);
    const p = new BubblewrapProvider({ rootDir: root });
    others.push(p);
    const k = key();
    const first = await p.create({ idempotencyKey: k, workspaceDir: workspace });
    await p.exec(first.id, { shell: 'echo stale > stale.txt' });
    await writeFile(join(root, first.id, 'meta.json'), '{ truncated'); // as if the write was cut short
    expect(await p.status(first.id)).toBe('gone');
    const again = await p.create({ idempotencyKey: k, workspaceDir: workspace });
    expect(again.id).toBe(first.id);
    expect(
      (await p.exec(again.id, { shell: 'ls stale.txt 2>/dev/null || echo fresh' })).stdout,
    ).toBe('fresh\n');
  });
});
