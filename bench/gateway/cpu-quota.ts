import path from 'node:path';
import { detectResourceControl, type ResourceControl, type ResourceLimits } from '../../sandbox/cgroups.js';
import { buildLauncher } from '../../sandbox/launcher.js';

/**
 * CPU quotas for the gateways of the scale rows, so N gateway processes can be compared with one on
 * a host with fewer free cores than N: the gateway and every process it forks run in a cgroup with
 * a CPU quota of N x a share (the sandbox's resource control, `sandbox/cgroups.ts`, with its
 * launcher), standing in for N cores. What it shows is what the processes cost one another (the
 * placement service, the shared store, the sessions' spread); not what real cores would share
 * (caches, memory bandwidth), and all of them still run on the same physical CPUs.
 */
export class CpuQuotas {
  private readonly groups = new Set<string>();

  private constructor(private readonly control: ResourceControl) {}

  /** Quotas under `dir` (the launcher is built there), or null when no cgroup hierarchy is writable here. */
  static async open(dir: string): Promise<CpuQuotas | null> {
    const launcher = await buildLauncher(path.join(dir, 'launcher'), 'cc');
    const control = await detectResourceControl({ kind: 'auto', parent: 'agent-rollout', rootDir: dir, launcher });
    return control.kind === 'prlimit' ? null : new CpuQuotas(control);
  }

  /** `command args` run in a new group `id` that may use `cores` of CPU time, with every process it starts (the launcher joins the group, then execs the command: the pid stays the command's). */
  async wrap(id: string, cores: number, [command, args]: [string, string[]]): Promise<[string, string[]]> {
    // Memory and processes are the sandbox controls' too; here only the CPU is meant to bind.
    const limits: ResourceLimits = { cpus: cores, memoryBytes: 16 * 2 ** 30, maxProcesses: 4096, diskBytes: 0 };
    await this.control.create(id, limits);
    this.groups.add(id);
    const [launcher, ...prefix] = [...this.control.launcher(id, limits), command, ...args];
    return [launcher!, prefix];
  }

  /** Kills what is left in the groups and removes them. */
  async removeAll(): Promise<void> {
    for (const id of this.groups) await this.control.remove(id);
    this.groups.clear();
    await this.control.release();
  }
}
