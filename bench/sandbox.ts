/**
 * Sandbox benchmark (shared/specs/sandbox.md): what the local bubblewrap provider costs.
 *
 *   npm run bench:sandbox
 *
 * 1. create + exec (`true`) + destroy latency, p50 and p99, sequentially, against a bare
 *    `bwrap ... true` over the same (base image) root in interleaved rounds, and their ratio;
 * 2. the most sandboxes held at once: idle sandboxes created until a create fails, the cap or
 *    the time budget, then all destroyed (time per create and per destroy at that scale);
 * 3. memory per sandbox: per idle sandbox (host MemAvailable drop / count, and the charge of its
 *    cgroup), and per sandbox with a process running in it (PSS of its bwrap + command processes
 *    plus its cgroup charge);
 * 4. reward evaluations per second: `evaluateReward` on a built-in pack task with its gold patch,
 *    sequentially and two at once;
 * 5. the gVisor provider's create + exec + destroy next to a bare `runsc run` (`sandbox-gvisor.ts`).
 *
 * Environment: BENCH_LATENCY_RUNS (default 200), BENCH_HOLD_CAP (default 1000),
 * BENCH_HOLD_SECONDS (time budget of the ramp, default 75), BENCH_BUSY
 * (sandboxes with a process, default 50), BENCH_REWARD_RUNS (default 12), BENCH_TASK (default
 * py-slugify-1), BENCH_GVISOR_RUNS (default 40; 0 leaves gVisor out). Sized to finish in about
 * three and a half minutes on 2 cores.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { BubblewrapProvider } from '../sandbox/bubblewrap.js';
import { baseImageRoot } from '../sandbox/images/base.js';
import { rootKeyOf } from '../sandbox/cgroups.js';
import type { SandboxInfo, SandboxProvider } from '../sandbox/provider.js';
import { builtinPackDir, loadTaskPack } from '../tasks/loader.js';
import { evaluateReward } from '../tasks/reward/index.js';
import { workspaceKeyOf } from '../tasks/workspace-key.js';
import { benchGVisor } from './sandbox-gvisor.js';

const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const LATENCY_RUNS = env('BENCH_LATENCY_RUNS', 200);
const HOLD_CAP = env('BENCH_HOLD_CAP', 1000);
const HOLD_SECONDS = env('BENCH_HOLD_SECONDS', 75);
const BUSY = env('BENCH_BUSY', 50);
const REWARD_RUNS = env('BENCH_REWARD_RUNS', 12);
const TASK = process.env.BENCH_TASK ?? 'py-slugify-1';
const GVISOR_RUNS = env('BENCH_GVISOR_RUNS', 40);
const MiB = 1024 * 1024;
const execFileAsync = promisify(execFile);

const quantile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const ms = (x: number): string => `${x.toFixed(1)} ms`;
const mib = (x: number): string => `${(x / MiB).toFixed(2)} MiB`;

async function memAvailable(): Promise<number> {
  const line = (await readFile('/proc/meminfo', 'utf8'))
    .split('\n')
    .find((l) => l.startsWith('MemAvailable:'));
  return Number(line!.split(/\s+/)[1]) * 1024;
}

/** PSS of a process (what it costs once shared pages are split among their users). */
async function pss(pid: string): Promise<number> {
  const text = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '');
  const line = text.split('\n').find((l) => l.startsWith('Pss:'));
  return line ? Number(line.split(/\s+/)[1]) * 1024 : 0;
}

async function cgroupPids(rootDir: string, id: string): Promise<string[]> {
  const base = join('/sys/fs/cgroup', 'agent-rollout', rootKeyOf(rootDir), id, 'cgroup.procs');
  const v1 = join('/sys/fs/cgroup/pids', 'agent-rollout', rootKeyOf(rootDir), id, 'cgroup.procs');
  const text = await readFile(v1, 'utf8').catch(() => readFile(base, 'utf8').catch(() => ''));
  return text.split('\n').filter(Boolean);
}

/**
 * Section 1: create + exec(`true`) + destroy against a bare bwrap over the base image's root (no
 * cgroup, user switch, filter or overlays), one of each per round so that load from elsewhere on
 * the host hits both alike. The image and the workspace layer are warm (one create first).
 */
async function createExecDestroyVsBareBwrap(
  provider: SandboxProvider,
  create: () => Promise<SandboxInfo>,
): Promise<void> {
  const [rootfs] = (await baseImageRoot()).layers;
  const bareArgs = ['--unshare-all', '--ro-bind', rootfs!, '/', '--proc', '/proc', '--dev', '/dev', 'true'];
  await provider.destroy((await create()).id);
  const phases = {
    create: [] as number[],
    exec: [] as number[],
    destroy: [] as number[],
    total: [] as number[],
  };
  const bare: number[] = [];
  for (let i = 0; i < LATENCY_RUNS; i++) {
    const t0 = performance.now();
    const info = await create();
    const t1 = performance.now();
    await provider.exec(info.id, ['true']);
    const t2 = performance.now();
    await provider.destroy(info.id);
    const t3 = performance.now();
    phases.create.push(t1 - t0);
    phases.exec.push(t2 - t1);
    phases.destroy.push(t3 - t2);
    phases.total.push(t3 - t0);
    const b0 = performance.now();
    await execFileAsync('bwrap', bareArgs);
    bare.push(performance.now() - b0);
  }
  bare.sort((a, b) => a - b);
  const [bare50, bare99] = [quantile(bare, 0.5), quantile(bare, 0.99)];
  console.log(`\n## create + exec + destroy, ${LATENCY_RUNS} interleaved rounds`);
  console.log(`bare     p50 ${ms(bare50).padStart(9)}   p99 ${ms(bare99).padStart(9)}   (\`bwrap --unshare-all --ro-bind <base image root> / ... true\`)`);
  for (const [name, xs] of Object.entries(phases)) {
    xs.sort((a, b) => a - b);
    const [p50, p99] = [quantile(xs, 0.5), quantile(xs, 0.99)];
    console.log(
      `${name.padEnd(8)} p50 ${ms(p50).padStart(9)}   p99 ${ms(p99).padStart(9)}   / bare: p50 ${(p50 / bare50).toFixed(2)}x, p99 ${(p99 / bare99).toFixed(2)}x`,
    );
  }
}

async function main(): Promise<void> {
  // 0700, like most data directories: the provider must cope.
  const scratch = await mkdtemp('/var/tmp/agent-rollout-bench-');
  const rootDir = join(scratch, 'root');
  const provider = new BubblewrapProvider({ rootDir, maxSandboxes: HOLD_CAP + 10 });
  const [task] = (await loadTaskPack(builtinPackDir())).filter((t) =>
    t.instance_id.startsWith(TASK),
  );
  if (!task) throw new Error(`no task ${TASK} in the built-in pack`);
  const workspaceDir = task.workspace.kind === 'dir' ? task.workspace.path : '';
  const workspaceKey = await workspaceKeyOf(workspaceDir);
  let n = 0;
  const create = (): Promise<SandboxInfo> =>
    provider.create({ idempotencyKey: `bench-${n++}`, workspaceDir, workspaceKey });
  console.log(`# bench:sandbox (${await provider.resourceControl()}, workspace ${TASK})`);

  try {
    await createExecDestroyVsBareBwrap(provider, create);

    // 2 and 3a. Idle sandboxes held at once.
    const memBefore = await memAvailable();
    const held: SandboxInfo[] = [];
    let stop = 'cap reached';
    const holdStart = performance.now();
    while (held.length < HOLD_CAP) {
      if (performance.now() - holdStart > HOLD_SECONDS * 1000) {
        stop = `time budget of ${HOLD_SECONDS} s reached`;
        break;
      }
      try {
        held.push(await create());
      } catch (error) {
        stop = `create failed: ${(error as Error).message}`;
        break;
      }
    }
    const holdMs = performance.now() - holdStart;
    await sleep(200);
    const idleDrop = memBefore - (await memAvailable());
    let idleCharge = 0;
    for (const s of held) idleCharge += (await provider.usage(s.id)).memoryBytes ?? 0;
    const { stdout: du } = await execFileAsync('du', ['-sb', rootDir]);
    const diskPerSandbox = Number(du.split('\t')[0]) / held.length;
    const alive = (
      await Promise.all(held.slice(-5).map((s) => provider.exec(s.id, ['true'])))
    ).every((r) => r.exitCode === 0);

    // 3b. Sandboxes with a process in them.
    const busy = held.slice(0, BUSY);
    const runs = busy.map((s) =>
      provider.exec(s.id, ['sleep', '600'], { timeoutMs: 600_000 }).catch(() => undefined),
    );
    for (const s of busy) while ((await cgroupPids(rootDir, s.id)).length < 3) await sleep(10);
    let busyPss = 0;
    let busyCharge = 0;
    for (const s of busy) {
      for (const pid of await cgroupPids(rootDir, s.id)) busyPss += await pss(pid);
      busyCharge += (await provider.usage(s.id)).memoryBytes ?? 0;
    }
    const destroyStart = performance.now();
    for (const s of held) await provider.destroy(s.id);
    const destroyMs = performance.now() - destroyStart;
    await Promise.all(runs);

    console.log(`\n## sandboxes held at once (cap ${HOLD_CAP})`);
    console.log(`held        ${held.length} (${stop}); the last ones still exec: ${alive}`);
    console.log(
      `create      ${ms(holdMs / held.length)} each on average, ${(holdMs / 1000).toFixed(1)} s in all`,
    );
    console.log(
      `destroy     ${ms(destroyMs / held.length)} each on average, ${(destroyMs / 1000).toFixed(1)} s in all`,
    );
    console.log(`\n## memory per sandbox`);
    console.log(
      `idle        ${mib(idleDrop / held.length)} of host MemAvailable (noisy on a shared host), ${mib(idleCharge / held.length)} charged to its cgroup, ${mib(diskPerSandbox)} on disk (its record; the workspace layer is shared)`,
    );
    console.log(
      `with a process (sleep), ${busy.length} sandboxes: PSS of bwrap + command ${mib(busyPss / busy.length)}, cgroup charge ${mib(busyCharge / busy.length)}`,
    );

    // 4. Reward evaluations.
    const agentDiff = task.patch;
    const evaluate = async (): Promise<void> => {
      const r = await evaluateReward(
        { provider },
        { task, agentDiff, idempotencyKey: `bench-reward-${n++}` },
      );
      if (!r.resolved) throw new Error(`gold patch not resolved: ${r.reason} ${r.detail ?? ''}`);
    };
    await evaluate(); // warm-up
    const seqStart = performance.now();
    for (let i = 0; i < REWARD_RUNS; i++) await evaluate();
    const seqS = (performance.now() - seqStart) / 1000;
    const parStart = performance.now();
    for (let i = 0; i < REWARD_RUNS; i += 2) await Promise.all([evaluate(), evaluate()]);
    const parS = (performance.now() - parStart) / 1000;
    const parRuns = Math.ceil(REWARD_RUNS / 2) * 2;
    console.log(`\n## reward evaluations (${task.instance_id}, gold patch, ${REWARD_RUNS} runs)`);
    console.log(
      `sequential  ${(REWARD_RUNS / seqS).toFixed(2)} /s (${ms((seqS * 1000) / REWARD_RUNS)} each)`,
    );
    console.log(
      `2 at once   ${(parRuns / parS).toFixed(2)} /s (${(parRuns / parS / (REWARD_RUNS / seqS)).toFixed(2)}x sequential)`,
    );

    // 5. gVisor.
    if (GVISOR_RUNS > 0) await benchGVisor({ scratch, workspaceDir, workspaceKey, runs: GVISOR_RUNS });
  } finally {
    await provider.sweepExpired(Number.MAX_SAFE_INTEGER);
    await provider.release();
    await rm(scratch, { recursive: true, force: true });
  }
}

await main();
