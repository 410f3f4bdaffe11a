/**
 * Reward benchmark: what the defences of the test reward cost, each against a baseline in the
 * same run, in interleaved rounds.
 *
 *   npm run bench:reward
 *
 * 1. reading the agent's changes: `workspaceDiff` (on the host, from the sandbox's writable
 *    layer) against `git add -A && git diff --cached --binary <base>` run inside the sandbox (how
 *    changes were read before), on the task's gold patch plus BENCH_REWARD_FILES new files;
 * 2. a reward evaluation on the gold patch: the first on a host (its suite baseline made: two more
 *    runs of the suite, alongside) against one with the baseline cached, and one with the baseline
 *    off;
 * 3. the static screen over a large diff (lines per second).
 *
 * Wall-clock figures on a shared 2-core machine are noisy: compare the ratios. Environment:
 * BENCH_REWARD_ROUNDS (default 6), BENCH_REWARD_FILES (default 2000), BENCH_TASK (default
 * py-slugify-1). Errors are counted and printed; the run exits 1 if there were any.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { BubblewrapProvider } from '../sandbox/bubblewrap.js';
import type { SandboxProvider } from '../sandbox/provider.js';
import { builtinPackDir, loadTaskPack } from '../tasks/loader.js';
import {
  activeRules,
  evaluateReward,
  screenDiff,
  workspaceDiff,
  type RewardDeps,
} from '../tasks/reward/index.js';
import type { Task } from '../tasks/schema.js';
import { workspaceKeyOf } from '../tasks/workspace-key.js';

const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const ROUNDS = env('BENCH_REWARD_ROUNDS', 6);
const FILES = env('BENCH_REWARD_FILES', 2000);
const TASK = process.env.BENCH_TASK ?? 'py-slugify-1';

/** How changes were read before they were read on the host. */
const IN_SANDBOX_DIFF = `set -e
git add -A
base=$(git rev-list --max-parents=0 HEAD | tail -n 1)
exec git diff --cached --binary --no-color --no-ext-diff --no-textconv --no-renames --src-prefix=a/ --dst-prefix=b/ "$base" --`;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (x: number): string => `${x.toFixed(1)} ms`;

let errors = 0;
async function timed(what: string, f: () => Promise<unknown>): Promise<number | undefined> {
  const t0 = performance.now();
  try {
    await f();
    return performance.now() - t0;
  } catch (err) {
    errors++;
    console.error(`error in ${what}: ${(err as Error).message}`);
    return undefined;
  }
}

function report(title: string, rows: Record<string, number[]>, baseline: string): void {
  console.log(`\n## ${title}`);
  const base = median(rows[baseline]!);
  for (const [name, xs] of Object.entries(rows)) {
    if (xs.length === 0) continue;
    const m = median(xs);
    console.log(
      `${name.padEnd(34)} median ${ms(m).padStart(10)}   ${(m / base).toFixed(2)}x ${baseline}`,
    );
  }
}

async function changesRead(
  provider: SandboxProvider,
  task: Task,
  workspaceDir: string,
): Promise<void> {
  const { id } = await provider.create({
    idempotencyKey: `bench-reward-agent-${process.pid}`,
    workspaceDir,
    workspaceKey: await workspaceKeyOf(workspaceDir),
  });
  try {
    const made = await provider.exec(
      id,
      {
        shell: `git apply - && mkdir -p gen && for i in $(seq 1 ${FILES}); do echo "line $i" > gen/f$i.txt; done`,
      },
      { stdin: task.patch },
    );
    if (made.exitCode !== 0) throw new Error(`agent state not made: ${made.stderr}`);
    const rows: Record<string, number[]> = {
      'in the sandbox (git, before)': [],
      'on the host (workspaceDiff)': [],
    };
    let sizes = '';
    for (let i = 0; i < ROUNDS; i++) {
      const host = await timed('workspaceDiff', async () => {
        const c = await workspaceDiff(provider, id);
        sizes = `${c.diff.length} bytes of diff`;
      });
      if (host !== undefined) rows['on the host (workspaceDiff)']!.push(host);
      const inside = await timed('in-sandbox diff', async () => {
        const r = await provider.exec(id, ['/bin/sh', '-c', IN_SANDBOX_DIFF], {
          env: { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
          maxOutputBytes: 64 * 1024 * 1024,
        });
        if (r.exitCode !== 0) throw new Error(r.stderr);
      });
      if (inside !== undefined) rows['in the sandbox (git, before)']!.push(inside);
    }
    report(
      `reading the agent's changes (gold patch + ${FILES} new files, ${sizes}, ${ROUNDS} rounds)`,
      rows,
      'in the sandbox (git, before)',
    );
  } finally {
    await provider.destroy(id);
  }
}

async function evaluations(
  provider: BubblewrapProvider,
  task: Task,
  scratch: string,
): Promise<void> {
  const cached = join(scratch, 'baselines-cached');
  let n = 0;
  const evaluate = (deps: Partial<RewardDeps>) => async (): Promise<void> => {
    const r = await evaluateReward(
      { provider, ...deps },
      { task, agentDiff: task.patch, idempotencyKey: `bench-reward-${process.pid}-${n++}` },
    );
    if (!r.resolved) throw new Error(`gold patch not resolved: ${r.reason} ${r.detail ?? ''}`);
  };
  await evaluate({ suiteBaselineDir: cached })(); // makes the cached baseline
  const rows: Record<string, number[]> = {
    'baseline off': [],
    'baseline cached': [],
    'first on a host (baseline made)': [],
  };
  for (let i = 0; i < ROUNDS; i++) {
    const cold = join(scratch, `baselines-cold-${i}`);
    const runs: [string, () => Promise<void>][] = [
      ['baseline off', evaluate({ suiteBaseline: false })],
      ['baseline cached', evaluate({ suiteBaselineDir: cached })],
      ['first on a host (baseline made)', evaluate({ suiteBaselineDir: cold })],
    ];
    for (const [name, run] of runs) {
      const t = await timed(name, run);
      if (t !== undefined) rows[name]!.push(t);
    }
  }
  report(
    `reward evaluations (${task.instance_id}, gold patch, ${ROUNDS} rounds)`,
    rows,
    'baseline off',
  );
}

function screen(task: Task): void {
  // A large diff of ordinary added code: the task's gold patch's added lines, many times over.
  const added = task.patch.split('\n').filter((l) => l.startsWith('+') && !l.startsWith('+++'));
  const lines = Array.from({ length: 200_000 }, (_, i) => added[i % added.length] ?? '+x = 1');
  const diff = `diff --git a/pkg/big.py b/pkg/big.py\nnew file mode 100644\n--- /dev/null\n+++ b/pkg/big.py\n@@ -0,0 +1,${lines.length} @@\n${lines.join('\n')}\n`;
  const t0 = performance.now();
  const flagged = screenDiff(diff, activeRules());
  const s = (performance.now() - t0) / 1000;
  console.log(`\n## static screen`);
  console.log(
    `${lines.length} added lines in ${s.toFixed(2)} s: ${Math.round(lines.length / s)} lines/s (${flagged.length} flagged)`,
  );
}

async function main(): Promise<void> {
  const scratch = await mkdtemp('/var/tmp/agent-rollout-bench-reward-');
  const provider = new BubblewrapProvider({ rootDir: join(scratch, 'root') });
  const [task] = (await loadTaskPack(builtinPackDir())).filter((t) =>
    t.instance_id.startsWith(TASK),
  );
  try {
    if (!task) throw new Error(`no task ${TASK} in the built-in pack`);
    if (task.workspace.kind !== 'dir') throw new Error(`${TASK}: a dir workspace is needed`);
    console.log(`# bench:reward (${TASK})`);
    await changesRead(provider, task, task.workspace.path);
    await evaluations(provider, task, scratch);
    screen(task);
  } finally {
    await provider.sweepExpired(Number.MAX_SAFE_INTEGER);
    await provider.release();
    await rm(scratch, { recursive: true, force: true });
  }
  console.log(`\nerrors: ${errors}`);
  if (errors > 0) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
