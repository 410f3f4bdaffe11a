/**
 * The gVisor provider: the shared host-side lifecycle with every command under its own Sentry.
 * Real runsc (ptrace platform), real cgroups, real images; no part is stood in for.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { release } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSidecarMounts } from '../../agents/presets/sidecar.js';
import { bridgedBaseUrl, bridgedCommand, startGatewayBridge } from '../../sandbox/bridge.js';
import { rootKeyOf } from '../../sandbox/cgroups.js';
import { GVisorProvider } from '../../sandbox/gvisor/provider.js';
import { createSandboxProvider } from '../../sandbox/index.js';
import {
  ProviderUnavailableError,
  SandboxGoneError,
  SandboxPausedError,
  type SandboxInfo,
  type SandboxLimits,
} from '../../sandbox/provider.js';
import { hostProcessesMatching, removeDirs, tempDir, writeTree } from './helpers.js';

const MiB = 1024 * 1024;
const CRASH_CHILD = fileURLToPath(new URL('../helpers/gvisor-child.ts', import.meta.url));
const dirs: string[] = [];
let rootDir: string;
let stateDir: string;
let workspace: string;
let provider: GVisorProvider;
let n = 0;

/** Waits for `check`; fails at once if one of the `running` commands ends first. */
const until = async (check: () => Promise<boolean>, ...running: Promise<unknown>[]): Promise<void> => {
  let ended = false;
  for (const r of running) r.then(() => (ended = true), () => (ended = true));
  while (!(await check())) {
    if (ended) throw new Error('a command ended before the condition held');
    await new Promise((r) => setTimeout(r, 20));
  }
};

const sandbox = (limits: SandboxLimits = {}, extra = {}): Promise<SandboxInfo> =>
  provider.create({
    idempotencyKey: `gvisor-${process.pid}-${n++}`,
    workspaceDir: workspace,
    limits,
    ...extra,
  });

/** A control file of the sandbox's cgroup, for whichever hierarchy the provider uses. */
async function cgroupFile(id: string, controller: string, file: string): Promise<string> {
  const v1 = (await provider.resourceControl()) === 'cgroup-v1';
  return join('/sys/fs/cgroup', v1 ? controller : '', 'agent-rollout', rootKeyOf(rootDir), id, file);
}

/** Host processes of a sandbox's runs: runsc, its Gofer and Sentry all name the container id. */
const runscProcesses = (id: string): Promise<string[]> =>
  hostProcessesMatching(id).then((ps) => ps.filter((p) => p.includes('runsc')));

/** Containers left in this process's runsc root (`runsc list`). */
function runscContainers(): string {
  return execFileSync('runsc', [`--root=${join(stateDir, String(process.pid), 'state')}`, 'list', '--quiet'], {
    encoding: 'utf8',
  }).trim();
}

beforeAll(async () => {
  rootDir = await tempDir('gvisor-root');
  stateDir = await tempDir('gvisor-state');
  workspace = await tempDir('gvisor-ws');
  dirs.push(rootDir, stateDir, workspace);
  await writeTree(workspace, { 'a.txt': 'a\n', 'src/app.py': 'print("hi")\n' });
  provider = new GVisorProvider({ rootDir, stateDir, defaultLimits: { memoryBytes: 512 * MiB } });
});

afterAll(async () => {
  await provider.sweepExpired(Number.MAX_SAFE_INTEGER);
  await provider.release();
  await removeDirs(dirs);
});

describe('GVisorProvider', () => {
  it('is what sandbox.provider: gvisor makes', () => {
    const made = createSandboxProvider({ provider: 'gvisor', rootDir });
    expect(made).toBeInstanceOf(GVisorProvider);
    expect(made.name).toBe('gvisor');
  });

  it("runs every command under gVisor's kernel, over the image, never the host", async () => {
    const hostOnly = await tempDir('gvisor-host-only');
    dirs.push(hostOnly);
    await writeFile(join(hostOnly, 'planted.txt'), 'host secret\n', { mode: 0o644 });
    const s = await sandbox();
    const r = await provider.exec(s.id, {
      shell: `cat /proc/version; dmesg | head -1; cat ${hostOnly}/planted.txt; ls /work; python3 -c 'import pytest; print(pytest.__version__.split(".")[0])'; id -u; grep CapEff /proc/self/status; python3 -c 'import ctypes; print("no_new_privs", ctypes.CDLL(None).prctl(39, 0, 0, 0, 0))'`,
    });
    const lines = r.stdout.split('\n');
    // The Sentry's own kernel: it reports a fixed old version and boots with its own banner.
    expect(lines[0]).toMatch(/^Linux version 4\.4\.0 /);
    expect(lines[0]).not.toContain(release());
    expect(lines[1]).toContain('Starting gVisor');
    expect(r.stdout).not.toContain('host secret');
    expect(r.stderr).toContain(`${hostOnly}/planted.txt: No such file or directory`);
    expect(r.stderr).toContain("ls: cannot access '/work': No such file or directory");
    // The image's Python with its pytest 7; the unprivileged user, no capabilities, no_new_privs.
    expect(lines.slice(2, 6)).toEqual(['7', '65534', 'CapEff:\t0000000000000000', 'no_new_privs 1']);
  });

  it('creates, runs, reads and writes files, and destroys leaving nothing behind', async () => {
    const s = await sandbox();
    expect(await provider.status(s.id)).toBe('running');
    const r = await provider.exec(s.id, ['sh', '-c', 'cat; pwd; git log --oneline | wc -l; exit 3'], {
      stdin: 'from stdin\n',
    });
    expect(r).toMatchObject({ exitCode: 3, timedOut: false, truncated: false });
    expect(r.stdout).toBe('from stdin\n/workspace\n1\n');
    expect((await provider.exec(s.id, ['ls', '-l', 'src'], { cwd: '/workspace' })).stdout).toContain(
      'app.py',
    );
    expect((await provider.exec(s.id, ['true'], { cwd: 'missing' })).exitCode).toBe(2);
    expect((await provider.exec(s.id, ['no-such-command'])).exitCode).toBe(127);

    await provider.writeFile(s.id, 'notes/new.txt', 'written\n');
    expect((await provider.exec(s.id, ['cat', 'notes/new.txt'])).stdout).toBe('written\n');
    await provider.exec(s.id, { shell: 'echo changed > a.txt; echo t > /tmp/t' });
    expect((await provider.readFile(s.id, 'a.txt')).toString()).toBe('changed\n');
    // Writes land in the host's layers at once: the host-side reward reads them there.
    expect(await readFile(join(provider.tmpHostDir(s.id), 't'), 'utf8')).toBe('t\n');
    const written = provider
      .exec(s.id, { shell: 'echo early > /tmp/early; sleep 30' })
      .catch((e: unknown) => e);
    await until(async () => existsSync(join(provider.tmpHostDir(s.id), 'early')), written);
    await provider.destroy(s.id);
    expect(await written).toBeInstanceOf(SandboxGoneError);
    expect(await provider.status(s.id)).toBe('gone');
    await provider.destroy(s.id);
    expect(await runscProcesses(s.id)).toEqual([]);
    expect(runscContainers()).toBe('');
  });

  it('kills a command at its timeout with every process of the run, and cleans runsc state', async () => {
    const s = await sandbox();
    const r = await provider.exec(
      s.id,
      { shell: 'setsid sleep 300 & (sleep 301 &); nohup sleep 302 >/dev/null 2>&1 & sleep 303' },
      { timeoutMs: 1_500 },
    );
    expect(r.timedOut).toBe(true);
    expect(await runscProcesses(s.id)).toEqual([]);
    expect(runscContainers()).toBe('');
    expect(await readdir(join(stateDir, String(process.pid), 'bundles'))).toEqual([]);
    // The sandbox outlives its command.
    expect((await provider.exec(s.id, ['echo', 'alive'])).stdout).toBe('alive\n');
    await provider.destroy(s.id);
  });

  it('kills a command whose caller aborts, and rejects with the abort reason', async () => {
    const s = await sandbox();
    const controller = new AbortController();
    const running = provider.exec(s.id, { shell: 'sleep 300' }, { signal: controller.signal });
    await until(async () => (await runscProcesses(s.id)).length > 0, running);
    controller.abort(new Error('worker shutting down'));
    await expect(running).rejects.toThrow('worker shutting down');
    expect(await runscProcesses(s.id)).toEqual([]);
    expect((await provider.exec(s.id, ['echo', 'alive'])).stdout).toBe('alive\n');
    await provider.destroy(s.id);
  });

  it('leaves nothing running when its worker dies mid-command; the next worker sweeps its runsc state', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', CRASH_CHILD, rootDir, stateDir, workspace], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const line = await new Promise<string>((resolve) => child.stdout.once('data', (d: Buffer) => resolve(d.toString())));
    const { id, tmp } = JSON.parse(line) as { id: string; tmp: string };
    await until(async () => existsSync(join(tmp, 'running')));
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    // runsc dies with its parent, and its Sentry with it.
    await until(async () => (await runscProcesses(id)).length === 0);
    const deadDir = join(stateDir, String(child.pid));
    expect(existsSync(deadDir)).toBe(true);
    // The next worker's first run deletes what the dead one left in runsc's state.
    const next = new GVisorProvider({ rootDir, stateDir });
    const s = await next.create({ idempotencyKey: `gvisor-next-${process.pid}`, workspaceDir: workspace });
    await next.exec(s.id, ['true']);
    expect(existsSync(deadDir)).toBe(false);
    await next.destroy(s.id);
    await next.destroy(id);
  });

  it('reports a runsc that cannot start as the provider unavailable, not as the command failing', async () => {
    const broken = new GVisorProvider({ rootDir, stateDir, runscPath: '/nonexistent/runsc' });
    const s = await broken.create({ idempotencyKey: `gvisor-broken-${process.pid}`, workspaceDir: workspace });
    const err = await broken.exec(s.id, ['true']).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderUnavailableError);
    expect((err as Error).message).toContain('/nonexistent/runsc');
    await broken.destroy(s.id);
  });

  it('bounds the output it keeps', async () => {
    const s = await sandbox();
    const r = await provider.exec(
      s.id,
      { shell: "head -c 200000 /dev/zero | tr '\\0' a; head -c 5000 /dev/zero >&2" },
      { maxOutputBytes: 1000 },
    );
    expect(r.stdout).toBe('a'.repeat(1000));
    expect(r.stderr.length).toBe(1000);
    expect(r.truncated).toBe(true);
    await provider.destroy(s.id);
  });

  it('runs commands of one sandbox at once, each under its own Sentry, on one workspace', async () => {
    const s = await sandbox();
    const waiter = provider.exec(s.id, { shell: 'while [ ! -e ready ]; do sleep 0.05; done; cat ready' });
    const writer = provider.exec(s.id, {
      shell: 'while [ ! -e /tmp/go ]; do sleep 0.05; done; echo from-the-other > ready',
    });
    const sentries = async (): Promise<number> =>
      (await runscProcesses(s.id)).filter((p) => p.includes('runsc-sandbox')).length;
    // Both commands are running, each in a Sentry (a kernel) of its own.
    await until(async () => (await sentries()) === 2, waiter, writer);
    await writeFile(join(provider.tmpHostDir(s.id), 'go'), '');
    expect((await waiter).stdout).toBe('from-the-other\n');
    expect((await writer).exitCode).toBe(0);
    await provider.destroy(s.id);
  });

  it('holds memory, process and disk limits', async () => {
    const s = await sandbox({ memoryBytes: 256 * MiB, maxProcesses: 32, diskBytes: 32 * MiB });
    // Memory: the cgroup's OOM killer ends the run (the Sentry holds its memory); the sandbox lives on.
    const hog = await provider.exec(s.id, [
      'python3',
      '-c',
      'b = []\nwhile len(b) < 64: b.append(bytearray(16 * 1024 * 1024))\nprint("allocated")',
    ]);
    expect(hog.exitCode).toBe(137);
    expect(hog.stdout).not.toContain('allocated');
    const v1 = (await provider.resourceControl()) === 'cgroup-v1';
    const events = await readFile(
      await cgroupFile(s.id, 'memory', v1 ? 'memory.oom_control' : 'memory.events'),
      'utf8',
    );
    expect(Number(/oom_kill (\d+)/.exec(events)?.[1])).toBeGreaterThan(0);
    // Processes: RLIMIT_NPROC inside the Sentry refuses the fork.
    const forks = await provider.exec(s.id, [
      'python3',
      '-c',
      `import os, time
n = 0
try:
    while n < 1000:
        if os.fork() == 0:
            time.sleep(30); os._exit(0)
        n += 1
    print("forked", n)
except OSError as e:
    print("fork failed", e.errno, n)`,
    ]);
    expect(forks.stdout).toMatch(/^fork failed 11 \d+\n$/);
    expect(Number(forks.stdout.split(' ')[3])).toBeLessThan(32);
    // Disk: the workspace, /tmp and /dev/shm are full at the cap.
    const fill = await provider.exec(s.id, {
      shell: ['/workspace/fill', '/tmp/fill', '/dev/shm/fill']
        .map((f) => `dd if=/dev/zero of=${f} bs=1M count=100 2>&1 | grep -c 'No space left'`)
        .join('; '),
    });
    expect(fill.stdout).toBe('1\n1\n1\n');
    expect((await provider.usage(s.id)).diskBytes).toBeLessThanOrEqual(32 * MiB);
    expect((await provider.exec(s.id, ['echo', 'alive'])).stdout).toBe('alive\n');
    await provider.destroy(s.id);
  });

  it("runs runsc, the Gofer and the Sentry in the sandbox's cgroup (CPU quota included)", async () => {
    const s = await sandbox({ cpus: 0.5 });
    const running = provider.exec(s.id, ['sleep', '30']).catch((e: unknown) => e);
    const procs = await cgroupFile(s.id, 'cpu', 'cgroup.procs');
    await until(async () => (await runscProcesses(s.id)).some((p) => p.includes('runsc-sandbox')), running);
    const inGroup = (await readFile(procs, 'utf8')).split('\n').filter(Boolean);
    const sentry = (await runscProcesses(s.id)).find((p) => p.includes('runsc-sandbox'))!;
    expect(inGroup).toContain(sentry.split(':')[0]);
    const v1 = (await provider.resourceControl()) === 'cgroup-v1';
    const quota = await readFile(await cgroupFile(s.id, 'cpu', v1 ? 'cpu.cfs_quota_us' : 'cpu.max'), 'utf8');
    expect(quota.trim()).toBe(v1 ? '50000' : '50000 100000');
    await provider.destroy(s.id);
    expect(await running).toBeInstanceOf(SandboxGoneError);
  });

  it('pauses and resumes a running command through the freezer', async () => {
    const s = await sandbox();
    const counter = join(provider.tmpHostDir(s.id), 'count');
    const loop = provider
      .exec(s.id, { shell: 'i=0; while :; do i=$((i+1)); echo $i > /tmp/count; sleep 0.02; done' })
      .catch((e: unknown) => e);
    await until(async () => existsSync(counter), loop);
    await provider.pause(s.id);
    expect(await provider.status(s.id)).toBe('paused');
    await expect(provider.exec(s.id, ['true'])).rejects.toBeInstanceOf(SandboxPausedError);
    await provider.resume(s.id);
    const before = await readFile(counter, 'utf8');
    await until(async () => (await readFile(counter, 'utf8')) !== before);
    // Destroying a paused sandbox thaws it first, so its Sentry can die.
    await provider.pause(s.id);
    await provider.destroy(s.id);
    expect(await loop).toBeInstanceOf(SandboxGoneError);
    expect(await runscProcesses(s.id)).toEqual([]);
  });

  it('reaches a host HTTP server only through the gateway bridge, like a black-box agent', async () => {
    const requests: string[] = [];
    const server: Server = createServer((req, res) => {
      requests.push(`${req.method} ${req.url}`);
      res.end('hello from the host');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    // The black-box agents' sidecar (its own Node runtime runs the forwarder) and the forwarder.
    const s = await sandbox({}, { readOnlyMounts: agentSidecarMounts() });
    const bridge = await startGatewayBridge({
      sandboxTmpHostDir: provider.tmpHostDir(s.id),
      gatewayUrls: [`http://127.0.0.1:${port}`],
      sessionId: 'gvisor-agent',
    });
    try {
      const agent = `import urllib.request
print(urllib.request.urlopen("${bridgedBaseUrl()}/v1/models").read().decode())
try:
    urllib.request.urlopen("http://127.0.0.1:${port}/direct", timeout=3)
except OSError as e:
    print("direct:", type(e.reason).__name__)`;
      const r = await provider.exec(
        s.id,
        bridgedCommand(['python3', '-c', agent], bridge),
      );
      expect(r.stderr).toBe('');
      // Through the bridge to the host; the host's own port is not reachable directly.
      expect(r.stdout).toBe('hello from the host\ndirect: ConnectionRefusedError\n');
      expect(requests).toEqual(['GET /v1/models']);
    } finally {
      await bridge.close();
      server.close();
      await provider.destroy(s.id);
    }
  });
});
