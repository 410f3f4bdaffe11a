/**
 * The sandbox half of the attack suite: each row is an attack program run the way the agent runs
 * its commands (a shell inside its sandbox), and the defence that must stop it. A row passes only
 * when the attack failed AND the evidence names the expected defence (an errno, a cgroup counter,
 * a host path absent from the image root), so a row cannot pass because something else happened
 * to break. The whole suite runs once per provider of `providers.ts`.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayBridge } from '../../sandbox/bridge.js';
import { defaultMountRoot, type LocalSandboxProvider } from '../../sandbox/local-provider.js';
import { rootKeyOf } from '../../sandbox/cgroups.js';
import {
  SandboxGoneError,
  type ExecResult,
  type SandboxInfo,
  type SandboxLimits,
} from '../../sandbox/provider.js';
import {
  hostProcessesMatching,
  removeAllSandboxes,
  removeDirs,
  tempDir,
  writeTree,
} from '../sandbox/helpers.js';
import { GVisorNeedsCgroupsError } from '../../sandbox/gvisor/provider.js';
import { printAttackTable, type AttackOutcome } from './table.js';
import { PROVIDER_FACTORIES, type ProviderFactory, type ProviderOptions } from './providers.js';

const MiB = 1024 * 1024;
/** Unique per run, so process checks never match another run's sleeps. */
const tag = `${process.pid % 1000}${Date.now() % 1000}`;
const sleepMarker = (n: number): string => `${1000 + n}.${tag}`;

/** The state of one provider's run of the suite, set up afresh by each `describe`. */
let dirs: string[] = [];
let providers: [LocalSandboxProvider, string][] = [];
let outcomes: AttackOutcome[] = [];
let factory: ProviderFactory;
let workspace: string;
let gatewayDataDir: string;
/** Readable by anyone, outside the data dir, the project and the task folder. */
let plantedSecret: string;
let main: LocalSandboxProvider;
let mainRoot: string;
let counter = 0;

async function newProvider(options: ProviderOptions = {}): Promise<[LocalSandboxProvider, string]> {
  const rootDir = await tempDir('attack-root');
  dirs.push(rootDir);
  const p = factory.make({ rootDir, hiddenPaths: [gatewayDataDir], ...options });
  providers.push([p, rootDir]);
  return [p, rootDir];
}

async function sandbox(
  limits: SandboxLimits = {},
  provider: LocalSandboxProvider = main,
): Promise<SandboxInfo> {
  return provider.create({
    idempotencyKey: `attack-${tag}-${counter++}`,
    workspaceDir: workspace,
    limits,
  });
}

const sh = (
  id: string,
  script: string,
  timeoutMs = 30_000,
  provider: LocalSandboxProvider = main,
): Promise<ExecResult> => provider.exec(id, { shell: script }, { timeoutMs });

const py = (id: string, code: string, provider: LocalSandboxProvider = main): Promise<ExecResult> =>
  provider.exec(id, ['python3', '-c', code], { timeoutMs: 60_000 });

/** A counter from a cgroup file of the sandbox (`oom_kill` in memory.events, `max` in pids.events). */
async function cgroupCounter(
  provider: LocalSandboxProvider,
  rootDir: string,
  id: string,
  controller: 'memory' | 'pids',
  key: string,
): Promise<number> {
  const rel = join('agent-rollout', rootKeyOf(rootDir), id);
  const v1 = (await provider.resourceControl()) === 'cgroup-v1';
  const file = v1
    ? join(
        '/sys/fs/cgroup',
        controller,
        rel,
        controller === 'memory' ? 'memory.oom_control' : 'pids.events',
      )
    : join('/sys/fs/cgroup', rel, `${controller}.events`);
  const line = (await readFile(file, 'utf8')).split('\n').find((l) => l.startsWith(`${key} `));
  return Number(line?.split(' ')[1] ?? 0);
}

/** errno of `syscall(nr, ...args)` via ctypes, or 0 when it succeeded. */
const SYSCALL_PROBE = `import ctypes, json, sys
libc = ctypes.CDLL(None, use_errno=True)
probes = {
  "ptrace(TRACEME)": (101, 0, 0, 0, 0),
  "mount(NULL)": (165, 0, 0, 0, 0),
  "unshare(NEWUSER)": (272, 0x10000000, 0, 0, 0),
  "unshare(NEWNET)": (272, 0x40000000, 0, 0, 0),
  "setns(0)": (308, 0, 0, 0, 0),
  "keyctl(GET_KEYRING_ID)": (250, 0, -3 & 0xffffffff, 0, 0),
  "perf_event_open(NULL)": (298, 0, 0, -1 & 0xffffffff, -1 & 0xffffffff),
  "kexec_load": (246, 0, 0, 0, 0),
  "init_module(NULL)": (175, 0, 0, 0, 0),
  "bpf": (321, 0, 0, 0, 0),
  "userfaultfd": (323, 0, 0, 0, 0),
}
out = {}
for name, (nr, *args) in probes.items():
    r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
    out[name] = 0 if r >= 0 else ctypes.get_errno()
print(json.dumps(out))`;

const gvisor = (): boolean => factory.name === 'gvisor';

/**
 * Host pids of the `sleep <marker>` processes themselves (not the bwrap around them). Under
 * gVisor no command of a sandbox is a host process: the pids of its Sentries stand in for them.
 */
async function sleepPids(marker: string, sandboxId: string): Promise<string[]> {
  const found = gvisor()
    ? (await hostProcessesMatching(sandboxId)).filter((p) => p.includes('runsc-sandbox'))
    : (await hostProcessesMatching(`sleep ${marker}`)).filter(
        (p) => p.split(': ')[1] === `sleep ${marker}`,
      );
  return found.map((p) => p.split(':')[0]!);
}

async function waitForSleep(marker: string, sandboxId: string): Promise<string> {
  for (;;) {
    const [pid] = await sleepPids(marker, sandboxId);
    if (pid) return pid;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Host processes a sandbox's runs left: its sleeps, and anything naming it (bwrap, runsc). */
async function leftBehind(markers: string[], sandboxId: string): Promise<string[]> {
  const sleeps = await Promise.all(markers.map((x) => hostProcessesMatching(`sleep ${x}`)));
  return [...sleeps.flat(), ...(await hostProcessesMatching(sandboxId))];
}

const EPERM = 1;
const ENOSPC = 28;

interface Attack {
  attack: string;
  /** The defence that must be named by the evidence. */
  defence: string;
  /**
   * The defence under gVisor, where it is another one (the Sentry answers the syscall, not the
   * host kernel). Default `defence`.
   */
  gvisorDefence?: string;
  run(): Promise<{ blocked: boolean; defence: string }>;
}

const expectedDefence = (a: Attack, provider: string): string =>
  provider === 'gvisor' ? (a.gvisorDefence ?? a.defence) : a.defence;

const attacks: Attack[] = [
  {
    attack: 'read /etc/shadow',
    defence: 'unprivileged-user',
    async run() {
      const s = await sandbox();
      const r = await sh(s.id, 'cat /etc/shadow');
      return {
        blocked: r.exitCode !== 0 && !r.stdout.includes('root:'),
        defence: r.stderr.includes('Permission denied') ? 'unprivileged-user' : 'unknown',
      };
    },
  },
  {
    attack: "read the gateway's data dir (session keys)",
    defence: 'image-root',
    async run() {
      const s = await sandbox();
      const r = await sh(s.id, `ls -A ${gatewayDataDir} | wc -l; cat ${gatewayDataDir}/keys.json`);
      return {
        blocked: !r.stdout.includes('gw-secret'),
        defence:
          r.stdout.startsWith('0\n') && r.stderr.includes('No such file')
            ? 'image-root'
            : 'unknown',
      };
    },
  },
  {
    attack: "read another sandbox's workspace",
    defence: 'image-root',
    async run() {
      const victim = await sandbox();
      await sh(victim.id, 'echo victim-secret > secret.txt');
      const s = await sandbox();
      const mounts = defaultMountRoot(mainRoot);
      const paths = ['workspace/secret.txt', 'rw/upper/secret.txt'].map((p) =>
        join(mounts, victim.id, p),
      );
      const r = await sh(s.id, `ls -A ${mainRoot} ${mounts} | grep -c sb-; cat ${paths.join(' ')}`);
      return {
        blocked: !r.stdout.includes('victim-secret'),
        defence:
          r.stdout.startsWith('0\n') && r.stderr.includes('No such file')
            ? 'image-root'
            : 'unknown',
      };
    },
  },
  {
    attack:
      'read a world-readable file planted elsewhere on the host (a git mirror, a sibling checkout)',
    defence: 'image-root',
    async run() {
      const s = await sandbox();
      const r = await sh(s.id, `cat ${plantedSecret}; ls ${join(plantedSecret, '..')}`);
      return {
        blocked: !r.stdout.includes('gold-fix'),
        defence:
          r.stderr.split('No such file or directory').length === 3 ? 'image-root' : 'unknown',
      };
    },
  },
  {
    attack: 'write host files (/etc, /usr, the task source, the data dir)',
    defence: 'read-only-image-root',
    async run() {
      const s = await sandbox();
      const targets = [
        '/etc/pwned',
        '/usr/local/bin/pwned',
        join(workspace, 'pwned'),
        join(gatewayDataDir, 'pwned'),
      ];
      // The Sentry checks permissions before the mount's read-only flag: the image's 1777
      // /var/tmp is where only the read-only root can refuse the write.
      const script = [...targets, ...(gvisor() ? ['/var/tmp/pwned'] : [])];
      const r = await sh(s.id, script.map((t) => `echo x > ${t}`).join('; '));
      const errors = r.stderr.split('\n');
      const readOnly = errors.filter((l) => l.includes('Read-only file system')).length;
      const denied = errors.filter((l) => l.includes('Permission denied')).length;
      const absent = errors.filter((l) => l.includes('Directory nonexistent')).length;
      // The image's own directories are read-only; the host's are not in the sandbox at all.
      const evidence = gvisor()
        ? denied === 2 && readOnly === 1 && absent === 2
        : readOnly === 2 && absent === 2;
      return {
        blocked: targets.every((t) => !existsSync(t)),
        defence: evidence ? 'read-only-image-root' : 'unknown',
      };
    },
  },
  {
    attack: 'lift its own limits through /sys/fs/cgroup',
    defence: 'image-root',
    gvisorDefence: 'gvisor-sentry',
    async run() {
      const s = await sandbox({ maxProcesses: 100 });
      const v1 = (await main.resourceControl()) === 'cgroup-v1';
      const rel = join('agent-rollout', rootKeyOf(mainRoot), s.id, 'pids.max');
      const readLimit = async (): Promise<string> =>
        (await readFile(join('/sys/fs/cgroup', v1 ? 'pids' : '', rel), 'utf8')).trim();
      // gVisor's cgroup counts its own host tasks too, so its cap is larger than the sandbox's.
      const set = gvisor() ? await readLimit() : '100';
      const r = await sh(
        s.id,
        'ls /sys/fs/cgroup; for f in /sys/fs/cgroup/*/agent-rollout/*/*/pids.max /sys/fs/cgroup/agent-rollout/*/*/pids.max; do [ -e "$f" ] && echo max > "$f"; done; true',
      );
      const limit = await readLimit();
      const blocked = limit === set && set !== 'max';
      // The Sentry shows a sysfs of its own, with no cgroup hierarchy in it.
      if (gvisor())
        return { blocked, defence: r.stdout + r.stderr === '' ? 'gvisor-sentry' : 'unknown' };
      return {
        blocked,
        // The host's cgroup filesystem is not part of the image root.
        defence: r.stderr.includes('No such file or directory') ? 'image-root' : 'unknown',
      };
    },
  },
  {
    attack: 'TCP to an address outside',
    defence: 'no-network',
    async run() {
      const s = await sandbox();
      const r = await py(
        s.id,
        `import socket
for host in ("1.1.1.1", "8.8.8.8"):
    try:
        socket.create_connection((host, 53), timeout=3); print("connected")
    except OSError as e:
        print("errno", e.errno)`,
      );
      // ENETUNREACH from the host kernel's empty network namespace; EHOSTUNREACH from the
      // Sentry's network stack, which has no route but loopback.
      const unreachable = gvisor() ? 'errno 113\nerrno 113\n' : 'errno 101\nerrno 101\n';
      return {
        blocked: !r.stdout.includes('connected'),
        defence: r.stdout === unreachable ? 'no-network' : 'unknown',
      };
    },
  },
  {
    attack: 'DNS lookup',
    defence: 'no-network',
    async run() {
      const s = await sandbox();
      const r = await py(
        s.id,
        `import socket
try:
    print("resolved", socket.getaddrinfo("example.com", 80))
except OSError as e:
    print("failed", type(e).__name__)
print(open("/proc/net/dev").read().count(":") )`,
      );
      return {
        blocked: !r.stdout.includes('resolved'),
        // Only one interface (lo) exists to send a query through.
        defence: r.stdout === 'failed gaierror\n1\n' ? 'no-network' : 'unknown',
      };
    },
  },
  {
    attack: "TCP to a port on the host's loopback",
    defence: 'no-network',
    async run() {
      let connected = false;
      const server: Server = createServer((_req, res) => {
        connected = true;
        res.end('host');
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const port = (server.address() as { port: number }).port;
      try {
        const s = await sandbox();
        const r = await py(
          s.id,
          `import socket
try:
    socket.create_connection(("127.0.0.1", ${port}), timeout=3); print("connected")
except OSError as e:
    print(type(e).__name__)`,
        );
        return {
          blocked: !connected && !r.stdout.includes('connected'),
          defence: r.stdout === 'ConnectionRefusedError\n' ? 'no-network' : 'unknown',
        };
      } finally {
        server.close();
      }
    },
  },
  {
    attack: "signal or inspect another sandbox's processes",
    defence: 'pid-namespace',
    async run() {
      const victim = await sandbox();
      const marker = sleepMarker(1);
      const victimRun = main
        .exec(victim.id, ['sleep', marker], { timeoutMs: 60_000 })
        .catch((e: unknown) => e);
      const hostPid = await waitForSleep(marker, victim.id);
      const s = await sandbox();
      const r = await sh(
        s.id,
        `ls /proc | grep -c '^[0-9]'; grep -l ${marker} /proc/[0-9]*/cmdline; kill -9 ${hostPid}`,
      );
      const stillThere = (await sleepPids(marker, victim.id)).includes(hostPid);
      await main.destroy(victim.id);
      expect(await victimRun).toBeInstanceOf(SandboxGoneError);
      const visible = Number(r.stdout.split('\n')[0]);
      return {
        blocked: stillThere,
        // The attacker's /proc holds only its own few processes, and the victim's pid is no one there.
        defence: visible <= 4 && r.stderr.includes('No such process') ? 'pid-namespace' : 'unknown',
      };
    },
  },
  {
    attack: "read another session's gateway key (env, /proc)",
    defence: 'pid-namespace',
    async run() {
      const victim = await sandbox();
      const key = `sk-victim-${tag}`;
      const marker = sleepMarker(2);
      const victimRun = main
        .exec(victim.id, ['sleep', marker], { timeoutMs: 60_000, env: { OPENAI_API_KEY: key } })
        .catch((e: unknown) => e);
      await waitForSleep(marker, victim.id);
      const s = await sandbox();
      const r = await sh(
        s.id,
        `cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c ${key}; env | grep -c ${key}; ls /proc | grep -c '^[0-9]'`,
      );
      await main.destroy(victim.id);
      await victimRun;
      const [inProc, inEnv, visible] = r.stdout.trim().split('\n').map(Number);
      return {
        blocked: inProc === 0 && inEnv === 0,
        defence: visible! <= 5 ? 'pid-namespace' : 'unknown',
      };
    },
  },
  {
    attack: "connect to another sandbox's gateway bridge socket",
    defence: 'image-root',
    async run() {
      let reached = false;
      const gateway: Server = createServer((_req, res) => {
        reached = true;
        res.end('gateway');
      });
      await new Promise<void>((r) => gateway.listen(0, '127.0.0.1', r));
      const port = (gateway.address() as { port: number }).port;
      const victim = await sandbox();
      const bridge = await startGatewayBridge({
        sandboxTmpHostDir: main.tmpHostDir(victim.id),
        gatewayUrls: [`http://127.0.0.1:${port}`],
        sessionId: 'victim',
      });
      try {
        const s = await sandbox();
        const r = await py(
          s.id,
          `import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("${bridge.hostSocketPath}"); s.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n"); print(s.recv(100))
except OSError as e:
    print(type(e).__name__)`,
        );
        return {
          blocked: !reached,
          defence: r.stdout === 'FileNotFoundError\n' ? 'image-root' : 'unknown',
        };
      } finally {
        await bridge.close();
        gateway.close();
      }
    },
  },
  {
    attack: 'fork bomb',
    defence: 'pids-limit',
    // The Sentry's RLIMIT_NPROC refuses the fork before the host's pids cgroup is ever reached.
    gvisorDefence: 'sentry-nproc-limit',
    async run() {
      const s = await sandbox({ maxProcesses: 64 });
      const r = await py(
        s.id,
        `import os, time
n = 0
try:
    while n < 5000:
        if os.fork() == 0:
            time.sleep(60); os._exit(0)
        n += 1
    print("forked", n)
except OSError as e:
    print("fork failed", e.errno, n)`,
      );
      const hits = await cgroupCounter(main, mainRoot, s.id, 'pids', 'max');
      const blocked =
        /^fork failed 11 \d+\n$/.test(r.stdout) && Number(r.stdout.split(' ')[3]) < 64;
      if (gvisor()) return { blocked, defence: hits === 0 ? 'sentry-nproc-limit' : 'unknown' };
      return { blocked, defence: hits > 0 ? 'pids-limit' : 'unknown' };
    },
  },
  {
    attack: 'memory bomb',
    defence: 'memory-limit',
    async run() {
      const s = await sandbox({ memoryBytes: 128 * MiB });
      const r = await py(
        s.id,
        `chunks = []
while len(chunks) < 256:
    chunks.append(bytearray(16 * 1024 * 1024))
print("allocated", len(chunks) * 16, "MiB")`,
      );
      const kills = await cgroupCounter(main, mainRoot, s.id, 'memory', 'oom_kill');
      // Only the sandbox's process died: the sandbox itself still works.
      const after = await sh(s.id, 'echo alive');
      return {
        blocked:
          r.exitCode === 137 && !r.stdout.includes('allocated') && after.stdout === 'alive\n',
        defence: kills > 0 ? 'memory-limit' : 'unknown',
      };
    },
  },
  {
    attack: 'fill the disk (/workspace, /tmp, /dev/shm)',
    defence: 'disk-cap',
    async run() {
      const s = await sandbox({ diskBytes: 32 * MiB });
      const r = await sh(
        s.id,
        ['/workspace/fill', '/tmp/fill', '/dev/shm/fill']
          .map((f) => `dd if=/dev/zero of=${f} bs=1M count=200 2>&1 | grep -c 'No space left'`)
          .join('; '),
      );
      const usage = await main.usage(s.id);
      return {
        blocked: usage.diskBytes !== undefined && usage.diskBytes <= 32 * MiB,
        defence: r.stdout === '1\n1\n1\n' ? 'disk-cap' : 'unknown',
      };
    },
  },
  {
    attack: 'outlive the time limit (setsid, double fork, nohup)',
    defence: 'wall-clock-kill',
    async run() {
      const s = await sandbox();
      const m = [3, 4, 5, 6].map(sleepMarker);
      const r = await sh(
        s.id,
        `setsid sh -c 'exec sleep ${m[0]}' & (sleep ${m[1]} &); nohup sleep ${m[2]} >/dev/null 2>&1 & sleep ${m[3]}`,
        1_500,
      );
      const left = await leftBehind(m, s.id);
      return {
        blocked: left.length === 0,
        defence: r.timedOut ? 'wall-clock-kill' : 'unknown',
      };
    },
  },
  {
    attack: 'leave daemons behind when the command exits',
    defence: 'pid-namespace',
    async run() {
      const s = await sandbox();
      const m = [7, 8].map(sleepMarker);
      const r = await sh(s.id, `setsid sleep ${m[0]} & (sleep ${m[1]} &); exit 0`);
      const left = await leftBehind(m, s.id);
      return {
        blocked: left.length === 0,
        defence: r.exitCode === 0 && !r.timedOut ? 'pid-namespace' : 'unknown',
      };
    },
  },
  {
    attack: 'leave processes behind after destroy',
    defence: 'destroy-kills-cgroup',
    async run() {
      const s = await sandbox();
      const m = [9, 10].map(sleepMarker);
      const running = sh(s.id, `setsid sleep ${m[0]} & sleep ${m[1]}`, 60_000).catch(
        (e: unknown) => e,
      );
      await waitForSleep(m[1]!, s.id);
      await main.destroy(s.id);
      const gone = (await running) instanceof SandboxGoneError;
      const left = await leftBehind(m, s.id);
      const v1 = (await main.resourceControl()) === 'cgroup-v1';
      const group = join(
        '/sys/fs/cgroup',
        v1 ? 'pids' : '',
        'agent-rollout',
        rootKeyOf(mainRoot),
        s.id,
      );
      return {
        blocked: gone && left.length === 0,
        defence: !existsSync(group) ? 'destroy-kills-cgroup' : 'unknown',
      };
    },
  },
  {
    attack:
      'kernel attack surface: ptrace, mount, unshare, setns, keyctl, perf, kexec, modules, bpf',
    defence: 'seccomp',
    gvisorDefence: 'gvisor-sentry',
    async run() {
      const s = await sandbox();
      const r = await py(s.id, SYSCALL_PROBE);
      const errnos = JSON.parse(r.stdout) as Record<string, number>;
      if (gvisor()) {
        // No call reaches the host kernel: the Sentry answers each. It serves ptrace and new
        // namespaces in its own kernel, refuses mount without capabilities, and does not implement
        // the rest at all (ENOSYS, ENODEV, EOPNOTSUPP; keyrings EACCES).
        const sentryAnswers = {
          'ptrace(TRACEME)': 0,
          'mount(NULL)': EPERM,
          'unshare(NEWUSER)': 0,
          'unshare(NEWNET)': 0,
          'setns(0)': 95,
          'keyctl(GET_KEYRING_ID)': 13,
          'perf_event_open(NULL)': 19,
          kexec_load: 38,
          'init_module(NULL)': 38,
          bpf: 38,
          userfaultfd: 38,
        };
        const kernel = await sh(s.id, 'cat /proc/version; dmesg | head -1');
        const inSentry = /^Linux version 4\.4\.0 .*\n.*Starting gVisor/.test(kernel.stdout);
        const answered = JSON.stringify(errnos) === JSON.stringify(sentryAnswers);
        return {
          blocked: inSentry,
          defence: inSentry && answered ? 'gvisor-sentry' : `unknown ${r.stdout}`,
        };
      }
      // EPERM from calls that would otherwise succeed (ptrace TRACEME, keyctl) or fail otherwise
      // (EFAULT for NULL pointers, ENOSPC for a user namespace) is the filter's answer.
      return {
        blocked: Object.values(errnos).every((e) => e !== 0),
        defence: Object.values(errnos).every((e) => e === EPERM)
          ? 'seccomp'
          : `unknown ${r.stdout}`,
      };
    },
  },
  {
    attack: 'nested user namespace with the seccomp filter off',
    defence: 'disable-userns',
    gvisorDefence: 'gvisor-sentry',
    async run() {
      const [p] = await newProvider({ seccomp: false });
      const s = await sandbox({}, p);
      if (gvisor()) {
        // The Sentry makes the namespace, in its own kernel: root in it is root of nothing on the host.
        const r = await sh(
          s.id,
          'unshare -Ur sh -c "id -u; cat /proc/version; dmesg | head -1"',
          30_000,
          p,
        );
        const inSentry = /^0\nLinux version 4\.4\.0 .*\n.*Starting gVisor/.test(r.stdout);
        return { blocked: inSentry, defence: inSentry ? 'gvisor-sentry' : `unknown ${r.stdout}` };
      }
      const r = await py(s.id, SYSCALL_PROBE, p);
      const errnos = JSON.parse(r.stdout) as Record<string, number>;
      const unshareCli = await sh(s.id, 'unshare -Ur id', 30_000, p);
      return {
        blocked: errnos['unshare(NEWUSER)'] !== 0 && unshareCli.exitCode !== 0,
        defence: errnos['unshare(NEWUSER)'] === ENOSPC ? 'disable-userns' : 'unknown',
      };
    },
  },
  {
    attack: 'memory bomb under the prlimit fallback',
    defence: 'rlimit-as',
    // The Sentry cannot start under an address-space cap: no gVisor sandbox without cgroups.
    gvisorDefence: 'cgroups-required',
    async run() {
      const [p] = await newProvider({ resourceControl: 'prlimit' });
      if (gvisor()) {
        const refused = await sandbox({ memoryBytes: 256 * MiB }, p).catch((e: unknown) => e);
        return {
          blocked: refused instanceof GVisorNeedsCgroupsError,
          defence: refused instanceof GVisorNeedsCgroupsError ? 'cgroups-required' : 'unknown',
        };
      }
      const s = await sandbox({ memoryBytes: 256 * MiB }, p);
      const r = await py(
        s.id,
        `chunks = []
try:
    while len(chunks) < 256:
        chunks.append(bytearray(16 * 1024 * 1024))
    print("allocated")
except MemoryError:
    print("MemoryError", len(chunks))`,
        p,
      );
      return {
        blocked: !r.stdout.includes('allocated'),
        defence: r.stdout.startsWith('MemoryError') ? 'rlimit-as' : 'unknown',
      };
    },
  },
];

describe.each(PROVIDER_FACTORIES)('sandbox escape attacks ($name)', (f) => {
  beforeAll(async () => {
    factory = f;
    dirs = [];
    providers = [];
    outcomes = [];
    workspace = await tempDir('attack-ws');
    gatewayDataDir = await tempDir('attack-gateway-data');
    dirs.push(workspace, gatewayDataDir);
    await writeTree(workspace, { 'app.py': 'print("hi")\n' });
    await writeTree(gatewayDataDir, { 'keys.json': '{"key":"gw-secret"}' });
    // Readable by anyone on the host, so only its absence from the sandbox can be what hides it.
    await chmod(gatewayDataDir, 0o755);
    await chmod(join(gatewayDataDir, 'keys.json'), 0o644);
    await chmod(workspace, 0o755);
    const plantedDir = join('/var/lib', `agent-rollout-attack-${randomBytes(6).toString('hex')}`);
    dirs.push(plantedDir);
    await mkdir(plantedDir, { mode: 0o755 });
    plantedSecret = join(plantedDir, 'gold.patch');
    await writeFile(plantedSecret, 'gold-fix\n', { mode: 0o644 });
    [main, mainRoot] = await newProvider({ defaultLimits: { memoryBytes: 512 * MiB } });
    await writeFile(join(workspace, 'README'), 'task\n');
  });

  afterAll(async () => {
    printAttackTable(`sandbox escape attacks (${f.name})`, outcomes);
    for (const [p] of providers) await removeAllSandboxes(p);
    await removeDirs(dirs);
  });

  for (const a of attacks) {
    const defence = expectedDefence(a, f.name);
    it(`${a.attack} → ${defence}`, async () => {
      const result = await a.run();
      outcomes.push({ attack: a.attack, ...result });
      expect(result).toEqual({ blocked: true, defence });
    });
  }
});
