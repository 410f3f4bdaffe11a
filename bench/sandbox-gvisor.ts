/**
 * The gVisor section of `bench:sandbox`: create + exec (`true`) + destroy through the gVisor
 * provider, interleaved run by run with a bare `runsc run` of the same command over the same
 * image root (no cgroup, binds, layers, shim or bookkeeping), and their ratio.
 */
import { execFile } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { GVisorProvider } from '../sandbox/gvisor/provider.js';
import { ociSpec } from '../sandbox/gvisor/oci-spec.js';
import { baseImageRoot } from '../sandbox/images/base.js';

const execFileAsync = promisify(execFile);

const quantile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const ms = (x: number): string => `${x.toFixed(1)} ms`;

export interface GVisorBenchOptions {
  /** A scratch directory of the benchmark's, removed by the caller. */
  scratch: string;
  /** The workspace every sandbox gets. */
  workspaceDir: string;
  /** Its prepared layer's key, as the bubblewrap section uses it (`workspaceKeyOf`). */
  workspaceKey: string;
  /** Runs of each kind. */
  runs: number;
}

/** A bundle that runs `true` as nobody over the base image's root, read-only, nothing bound. */
async function bareBundle(dir: string): Promise<void> {
  const image = await baseImageRoot();
  const spec = ociSpec({
    rootDir: image.layers[0]!,
    binds: [],
    env: image.env,
    cwd: '/',
    argv: ['true'],
    user: { uid: 65534, gid: 65534 },
    shmBytes: 64 * 1024 * 1024,
    maxProcesses: 512,
  });
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'config.json'), JSON.stringify(spec));
}

export async function benchGVisor(options: GVisorBenchOptions): Promise<void> {
  const provider = new GVisorProvider({
    rootDir: join(options.scratch, 'gvisor-root'),
    stateDir: join(options.scratch, 'gvisor-state'),
  });
  const bundle = join(options.scratch, 'gvisor-bare');
  const bareRoot = join(options.scratch, 'gvisor-bare-state');
  await bareBundle(bundle);
  const phases = { create: [] as number[], exec: [] as number[], destroy: [] as number[], total: [] as number[] };
  const bare: number[] = [];
  try {
    // One warm-up of each (the statx shim is built on the provider's first run).
    const { workspaceDir, workspaceKey } = options;
    const warm = await provider.create({ idempotencyKey: 'bench-gvisor-warm', workspaceDir, workspaceKey });
    await provider.exec(warm.id, ['true']);
    await provider.destroy(warm.id);
    for (let i = 0; i < options.runs; i++) {
      const t0 = performance.now();
      const info = await provider.create({ idempotencyKey: `bench-gvisor-${i}`, workspaceDir, workspaceKey });
      const t1 = performance.now();
      const r = await provider.exec(info.id, ['true']);
      const t2 = performance.now();
      await provider.destroy(info.id);
      const t3 = performance.now();
      if (r.exitCode !== 0) throw new Error(`gvisor exec of true failed: ${r.stderr}`);
      phases.create.push(t1 - t0);
      phases.exec.push(t2 - t1);
      phases.destroy.push(t3 - t2);
      phases.total.push(t3 - t0);
      const b0 = performance.now();
      await execFileAsync('runsc', [
        '--platform=ptrace',
        '--network=none',
        `--root=${bareRoot}`,
        'run',
        '--bundle',
        bundle,
        `bench-bare-${process.pid}-${i}`,
      ]);
      bare.push(performance.now() - b0);
    }
  } finally {
    await provider.sweepExpired(Number.MAX_SAFE_INTEGER);
    await provider.release();
    await rm(bundle, { recursive: true, force: true });
  }
  bare.sort((a, b) => a - b);
  const bareP50 = quantile(bare, 0.5);
  console.log(`\n## gvisor: create + exec + destroy, ${options.runs} runs interleaved with bare runsc`);
  console.log(
    `baseline: bare \`runsc --platform=ptrace --network=none run\` of true over the base image p50 ${ms(bareP50)}, p99 ${ms(quantile(bare, 0.99))}`,
  );
  for (const [name, xs] of Object.entries(phases)) {
    xs.sort((a, b) => a - b);
    const p50 = quantile(xs, 0.5);
    console.log(
      `${name.padEnd(8)} p50 ${ms(p50).padStart(9)}   p99 ${ms(quantile(xs, 0.99)).padStart(9)}   p50 / bare runsc ${(p50 / bareP50).toFixed(2)}x`,
    );
  }
}
