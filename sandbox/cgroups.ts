/**
 * Resource limits of a sandbox: one cgroup per sandbox (v2, or v1 with the memory, pids, cpu and
 * freezer controllers), detected at run time, or `prlimit` rlimits where no cgroup hierarchy is
 * writable. Every exec of a sandbox joins the sandbox's cgroup before bwrap starts (the launcher,
 * `launcher.ts`, moves itself into the group and then execs bwrap), so limits hold across all the
 * sandbox's commands together, and the freezer and the kill reach all of them.
 *
 * Cgroups live at `<mount>/<parent>/<rootKey>/<sandboxId>`: `rootKey` is derived from the
 * provider's root directory, so two providers on one host never sweep each other's groups.
 */
import { createHash } from 'node:crypto';
import { access, mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { launcherArgv } from './launcher.js';
import { ProviderUnavailableError, SandboxError } from './provider.js';
import type { SandboxUser } from './runner.js';

export type ResourceControlKind = 'cgroup-v2' | 'cgroup-v1' | 'prlimit';

export interface ResourceLimits {
  memoryBytes: number;
  maxProcesses: number;
  cpus: number;
  /** Only prlimit uses it (largest file); cgroups leave disk to the size-capped tmpfs. */
  diskBytes: number;
}

export interface ResourceControl {
  readonly kind: ResourceControlKind;
  /** Whether pause/resume work (a freezer exists). */
  readonly canFreeze: boolean;
  /** Makes the sandbox's group with its limits; idempotent. */
  create(id: string, limits: ResourceLimits): Promise<void>;
  /**
   * The argv prefix that puts the command that follows under the sandbox's limits, as `user`
   * when given (else as root), and execs it.
   */
  launcher(id: string, limits: ResourceLimits, user?: SandboxUser): string[];
  freeze(id: string): Promise<void>;
  thaw(id: string): Promise<void>;
  /** Kills every process of the sandbox and resolves once none is left. */
  killAll(id: string): Promise<void>;
  /** Kills what is left and removes the group; idempotent. */
  remove(id: string): Promise<void>;
  /** Bytes the group charges now (memory incl. its tmpfs pages); undefined without cgroups. */
  memoryUsage(id: string): Promise<number | undefined>;
  /** Ids of the groups that exist (to sweep the ones whose sandbox is gone). */
  listIds(): Promise<string[]>;
  /** Removes the provider's parent group(s) if no sandbox group is left in them. */
  release(): Promise<void>;
}

/** Pause or resume asked of a provider whose host has no freezer. */
export class FreezerUnavailableError extends SandboxError {
  override name = 'FreezerUnavailableError';
  constructor() {
    super('pause/resume need a cgroup freezer, and none is writable on this host', false);
  }
}

const CGROUP_MOUNT = '/sys/fs/cgroup';
const V1_CONTROLLERS = ['memory', 'pids', 'cpu', 'freezer'] as const;
const CPU_PERIOD_US = 100_000;

export function rootKeyOf(rootDir: string): string {
  return createHash('sha256').update(rootDir).digest('hex').slice(0, 12);
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

async function writeControl(path: string, value: string): Promise<void> {
  try {
    await writeFile(path, value);
  } catch (err) {
    throw new ProviderUnavailableError(
      `cannot write ${value.trim()} to ${path}: ${(err as Error).message}`,
      {
        cause: err,
      },
    );
  }
}

async function pidsIn(procsFile: string): Promise<number[]> {
  const text = await readFile(procsFile, 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).map(Number);
}

/** SIGKILLs the group's processes until it is empty (the freezer is thawed first by the caller). */
async function killUntilEmpty(procsFile: string): Promise<void> {
  for (let round = 0; ; round++) {
    const pids = await pidsIn(procsFile);
    if (pids.length === 0) return;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Exited meanwhile.
      }
    }
    if (round > 5000) throw new ProviderUnavailableError(`processes of ${procsFile} do not die`);
    await sleep(round < 50 ? 1 : 10);
  }
}

/** rmdir of a group that has no task (or is gone already): `false` when one is left in it. */
async function removeIfEmpty(dir: string): Promise<boolean> {
  try {
    await rmdir(dir);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return true;
    if (code === 'EBUSY') return false;
    throw new ProviderUnavailableError(`cannot remove cgroup ${dir}: ${(err as Error).message}`);
  }
}

/** rmdir that tolerates a group that is already gone and waits out a briefly busy one. */
async function removeGroupDir(dir: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await rmdir(dir);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (code !== 'EBUSY' || attempt >= 200) {
        throw new ProviderUnavailableError(
          `cannot remove cgroup ${dir}: ${(err as Error).message}`,
        );
      }
      await sleep(5);
    }
  }
}

class CgroupV1 implements ResourceControl {
  readonly kind = 'cgroup-v1';
  readonly canFreeze = true;
  constructor(
    private readonly base: (controller: string) => string,
    private readonly launcherPath: string,
  ) {}

  private dir(controller: string, id: string): string {
    return join(this.base(controller), id);
  }

  async create(id: string, limits: ResourceLimits): Promise<void> {
    // One hierarchy per controller: the groups and their limits are independent of each other.
    await Promise.all(V1_CONTROLLERS.map((c) => mkdir(this.dir(c, id), { recursive: true })));
    await Promise.all([
      writeControl(join(this.dir('memory', id), 'memory.limit_in_bytes'), `${limits.memoryBytes}`),
      writeControl(join(this.dir('pids', id), 'pids.max'), `${limits.maxProcesses}`),
      // A new group's period is always the kernel's default, CPU_PERIOD_US: the quota is enough.
      writeControl(
        join(this.dir('cpu', id), 'cpu.cfs_quota_us'),
        `${Math.max(1000, Math.round(limits.cpus * CPU_PERIOD_US))}`,
      ),
    ]);
  }

  launcher(id: string, _limits: ResourceLimits, user?: SandboxUser): string[] {
    // `tasks`, not `cgroup.procs`: the launcher is single-threaded, and moving one thread spares
    // the kernel's global threadgroup lock (an RCU grace period per write on a busy host).
    const tasks = V1_CONTROLLERS.map((c) => join(this.dir(c, id), 'tasks'));
    return launcherArgv(this.launcherPath, { join: tasks, user });
  }

  async freeze(id: string): Promise<void> {
    await this.setFreezer(id, 'FROZEN');
  }

  async thaw(id: string): Promise<void> {
    await this.setFreezer(id, 'THAWED');
  }

  private async setFreezer(id: string, state: 'FROZEN' | 'THAWED'): Promise<void> {
    const file = join(this.dir('freezer', id), 'freezer.state');
    if (!(await exists(file))) return;
    await writeControl(file, state);
    // FREEZING means some task has not stopped yet; the state settles within milliseconds.
    for (let i = 0; i < 1000 && (await readFile(file, 'utf8')).trim() !== state; i++) {
      await writeControl(file, state);
      await sleep(2);
    }
  }

  async killAll(id: string): Promise<void> {
    await this.thaw(id);
    await killUntilEmpty(join(this.dir('pids', id), 'cgroup.procs'));
  }

  async remove(id: string): Promise<void> {
    // rmdir fails with EBUSY while a group has a task: an empty sandbox is removed at once, and
    // only a group with something left in it is thawed and emptied first.
    const busy = (
      await Promise.all(
        V1_CONTROLLERS.map(async (c) => ((await removeIfEmpty(this.dir(c, id))) ? [] : [c])),
      )
    ).flat();
    if (busy.length === 0) return;
    await this.thaw(id);
    for (const c of busy) await killUntilEmpty(join(this.dir(c, id), 'cgroup.procs'));
    await Promise.all(busy.map((c) => removeGroupDir(this.dir(c, id))));
  }

  async memoryUsage(id: string): Promise<number | undefined> {
    const text = await readFile(
      join(this.dir('memory', id), 'memory.usage_in_bytes'),
      'utf8',
    ).catch(() => undefined);
    return text === undefined ? undefined : Number(text);
  }

  async release(): Promise<void> {
    for (const c of V1_CONTROLLERS) await rmdir(this.base(c)).catch(() => undefined);
  }

  async listIds(): Promise<string[]> {
    const ids = new Set<string>();
    for (const c of V1_CONTROLLERS) {
      for (const e of await readdir(this.base(c), { withFileTypes: true }).catch(() => []))
        if (e.isDirectory()) ids.add(e.name);
    }
    return [...ids];
  }
}

class CgroupV2 implements ResourceControl {
  readonly kind = 'cgroup-v2';
  readonly canFreeze = true;
  constructor(
    private readonly base: string,
    private readonly launcherPath: string,
  ) {}

  private dir(id: string): string {
    return join(this.base, id);
  }

  async create(id: string, limits: ResourceLimits): Promise<void> {
    const dir = this.dir(id);
    await mkdir(dir, { recursive: true });
    await writeControl(join(dir, 'memory.max'), `${limits.memoryBytes}`);
    await writeControl(join(dir, 'memory.swap.max'), '0').catch(() => undefined);
    await writeControl(join(dir, 'pids.max'), `${limits.maxProcesses}`);
    await writeControl(
      join(dir, 'cpu.max'),
      `${Math.max(1000, Math.round(limits.cpus * CPU_PERIOD_US))} ${CPU_PERIOD_US}`,
    );
  }

  launcher(id: string, _limits: ResourceLimits, user?: SandboxUser): string[] {
    return launcherArgv(this.launcherPath, { join: [join(this.dir(id), 'cgroup.procs')], user });
  }

  async freeze(id: string): Promise<void> {
    await this.setFrozen(id, true);
  }

  async thaw(id: string): Promise<void> {
    await this.setFrozen(id, false);
  }

  private async setFrozen(id: string, frozen: boolean): Promise<void> {
    const dir = this.dir(id);
    if (!(await exists(dir))) return;
    await writeControl(join(dir, 'cgroup.freeze'), frozen ? '1' : '0');
    const want = frozen ? 'frozen 1' : 'frozen 0';
    for (let i = 0; i < 1000; i++) {
      const events = await readFile(join(dir, 'cgroup.events'), 'utf8').catch(() => want);
      if (events.includes(want)) return;
      await sleep(2);
    }
  }

  async killAll(id: string): Promise<void> {
    const dir = this.dir(id);
    if (!(await exists(dir))) return;
    // cgroup.kill (5.14+) kills frozen tasks too, and atomically with respect to forks.
    if (await exists(join(dir, 'cgroup.kill'))) await writeControl(join(dir, 'cgroup.kill'), '1');
    else await this.thaw(id);
    await killUntilEmpty(join(dir, 'cgroup.procs'));
  }

  async remove(id: string): Promise<void> {
    if (await removeIfEmpty(this.dir(id))) return;
    await this.killAll(id);
    await removeGroupDir(this.dir(id));
  }

  async memoryUsage(id: string): Promise<number | undefined> {
    const text = await readFile(join(this.dir(id), 'memory.current'), 'utf8').catch(
      () => undefined,
    );
    return text === undefined ? undefined : Number(text);
  }

  async release(): Promise<void> {
    await rmdir(this.base).catch(() => undefined);
  }

  async listIds(): Promise<string[]> {
    const entries = await readdir(this.base, { withFileTypes: true }).catch(() => []);
    return entries.filter((e) => e.isDirectory()).map((e) => e.name);
  }
}

/**
 * rlimits on the bwrap process tree. Weaker than cgroups: memory is address space per process,
 * processes count per host user (all sandboxes run as one uid), no CPU share and no freezer.
 */
class Prlimit implements ResourceControl {
  readonly kind = 'prlimit';
  readonly canFreeze = false;
  constructor(private readonly launcherPath: string) {}
  async create(): Promise<void> {}
  launcher(_id: string, limits: ResourceLimits, user?: SandboxUser): string[] {
    return [
      'prlimit',
      `--as=${limits.memoryBytes}`,
      `--nproc=${limits.maxProcesses}`,
      `--fsize=${limits.diskBytes}`,
      '--',
      ...(user ? launcherArgv(this.launcherPath, { join: [], user }) : []),
    ];
  }
  async freeze(): Promise<void> {
    throw new FreezerUnavailableError();
  }
  async thaw(): Promise<void> {
    throw new FreezerUnavailableError();
  }
  async killAll(): Promise<void> {}
  async remove(): Promise<void> {}
  async memoryUsage(): Promise<undefined> {
    return undefined;
  }
  async listIds(): Promise<string[]> {
    return [];
  }
  async release(): Promise<void> {}
}

/** Whether the group directory `dir` exists or can be made (the hierarchy is writable). */
async function writable(dir: string): Promise<boolean> {
  try {
    await mkdir(dir, { recursive: true });
    return true;
  } catch {
    return false;
  }
}

export interface ResourceControlOptions {
  /** `auto` picks cgroup v2, else v1, else prlimit. */
  kind: ResourceControlKind | 'auto';
  /** Group name under each hierarchy's root. */
  parent: string;
  rootDir: string;
  /** The built launcher (`launcher.ts`) every command starts with. */
  launcher: string;
  /** The cgroup filesystem; injectable for tests of the detection. Default `/sys/fs/cgroup`. */
  mount?: string;
}

/** Picks and prepares the resource control this host allows. */
export async function detectResourceControl(
  options: ResourceControlOptions,
): Promise<ResourceControl> {
  const mount = options.mount ?? CGROUP_MOUNT;
  const rel = join(options.parent, rootKeyOf(options.rootDir));
  const want = options.kind;
  const isV2 = await exists(join(mount, 'cgroup.controllers'));
  if ((want === 'auto' || want === 'cgroup-v2') && isV2) {
    const controllers = await readFile(join(mount, 'cgroup.controllers'), 'utf8').catch(() => '');
    const needed = ['memory', 'pids', 'cpu'];
    if (
      needed.every((c) => controllers.split(/\s+/).includes(c)) &&
      (await writable(join(mount, rel)))
    ) {
      // Each level on the way must hand the controllers down to its children.
      let dir = mount;
      for (const part of rel.split('/')) {
        await writeControl(
          join(dir, 'cgroup.subtree_control'),
          needed.map((c) => `+${c}`).join(' '),
        );
        dir = join(dir, part);
      }
      await writeControl(join(dir, 'cgroup.subtree_control'), needed.map((c) => `+${c}`).join(' '));
      return new CgroupV2(join(mount, rel), options.launcher);
    }
  }
  if ((want === 'auto' || want === 'cgroup-v1') && !isV2) {
    let ok = true;
    for (const c of V1_CONTROLLERS) {
      ok &&= (await exists(join(mount, c, 'tasks'))) && (await writable(join(mount, c, rel)));
    }
    if (ok) return new CgroupV1((c) => join(mount, c, rel), options.launcher);
  }
  if (want === 'auto' || want === 'prlimit') return new Prlimit(options.launcher);
  throw new ProviderUnavailableError(`resource control ${want} is not available on this host`);
}
