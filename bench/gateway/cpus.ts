import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * Which CPUs the benchmark's processes run on. In a deployment the gateway does not share its cores
 * with the engines (they run on GPUs elsewhere) or with the agents (in their sandboxes); on one small
 * machine they compete, and the engine's and the load generator's work then shows up as the
 * gateway's latency. So by default the middlebox under test (gateway replicas, or LiteLLM) gets the
 * upper half of the allowed CPUs (at least one) and the engine and the load generator the rest.
 * BENCH_PIN=0 (or a single CPU) runs everything unpinned.
 */
export interface CpuPlan {
  /** CPU list for the middlebox (`taskset -c` syntax), or null when unpinned. */
  middlebox: string | null;
  /** CPU list for the engine and the load generator, or null when unpinned. */
  rest: string | null;
}

/** The CPUs a process may run on, from /proc/<pid>/status (`Cpus_allowed_list: 0-3,6`); throws once it is gone. */
export function allowedCpus(pid: number | 'self' = 'self'): number[] {
  const line = /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? '';
  return line.split(',').flatMap((range) => {
    const [from, to = from] = range.split('-').map(Number);
    return Number.isInteger(from) && Number.isInteger(to) ? Array.from({ length: to! - from! + 1 }, (_, i) => from! + i) : [];
  });
}

export function cpuPlan(enabled: boolean): CpuPlan {
  const cpus = allowedCpus();
  const hasTaskset = spawnSync('taskset', ['--version']).status === 0;
  if (!enabled || cpus.length < 2 || !hasTaskset) return { middlebox: null, rest: null };
  const split = cpus.length - Math.max(1, Math.floor(cpus.length / 2));
  return { middlebox: cpus.slice(split).join(','), rest: cpus.slice(0, split).join(',') };
}

/** `command args` run on `cpus` (taskset execs it: the pid is the command's), or unchanged when unpinned. */
export function onCpus(cpus: string | null, command: string, args: string[]): [string, string[]] {
  return cpus === null ? [command, args] : ['taskset', ['-c', cpus, command, ...args]];
}

/** Moves this process, every thread of it, to `cpus`. */
export function pinSelf(cpus: string | null): void {
  if (cpus === null) return;
  const r = spawnSync('taskset', ['-a', '-p', '-c', cpus, String(process.pid)]);
  if (r.status !== 0) throw new Error(`taskset could not pin the load generator to CPUs ${cpus}: ${r.stderr.toString().trim()}`);
}

export function describePlan(plan: CpuPlan): string {
  return plan.middlebox === null ? 'all processes unpinned' : `gateway/LiteLLM on CPUs ${plan.middlebox}, engine and load generator on CPUs ${plan.rest} (BENCH_PIN=0: unpinned)`;
}
