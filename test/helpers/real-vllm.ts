import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { defaultModelDir } from '../../gateway/codec/model-files.js';
import { allowedCpus } from '../../bench/gateway/cpus.js';
import { freePort } from '../../stack/ports.js';
import { PROJECT_ROOT } from '../../stack/temporal-binary.js';
import { procStat } from '../../sandbox/proc-stat.js';

/** The venv scripts/install-vllm.sh installs vLLM (CPU), torch and transformers into. */
export const VLLM_PYTHON = path.join(PROJECT_ROOT, '.tools', 'vllm', 'bin', 'python');
const TINY_QWEN3 = path.join(PROJECT_ROOT, 'test', 'helpers', 'tiny-qwen3.py');
/** The name the gateway's test helpers ask for (startTestGateway). */
export const SERVED_MODEL = 'Qwen/Qwen3-8B';

export class VllmNotInstalledError extends Error {
  override name = 'VllmNotInstalledError';
}

export class VllmStartError extends Error {
  override name = 'VllmStartError';
}

/** Nothing may come from the network: the model is built here, the hub is off. */
const OFFLINE_ENV = { HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1', VLLM_NO_USAGE_STATS: '1', DO_NOT_TRACK: '1' };

function requireVllmPython(): string {
  if (!existsSync(VLLM_PYTHON)) {
    throw new VllmNotInstalledError(`vLLM is not installed (${VLLM_PYTHON} is missing): run scripts/install-vllm.sh (scripts/setup.sh runs it)`);
  }
  return VLLM_PYTHON;
}

/** Runs tiny-qwen3.py with the venv's python; resolves its stdout, rejects with its stderr. */
function runTinyQwen3(args: string[], stdin?: string): Promise<string> {
  const python = requireVllmPython();
  return new Promise((resolve, reject) => {
    const child = spawn(python, [TINY_QWEN3, ...args], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...OFFLINE_ENV } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`tiny-qwen3.py ${args[0]} exited ${code}: ${stderr}`))));
    child.stdin.end(stdin ?? '');
  });
}

/**
 * Builds the tiny random-weight Qwen3 (test/helpers/tiny-qwen3.py) in a fresh temporary folder,
 * with the Qwen3 tokenizer the gateway uses and a generation_config.json that sets top_k 20.
 */
export async function buildTinyQwen3(): Promise<string> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tiny-qwen3-'));
  await runTinyQwen3(['build', dir, defaultModelDir()]);
  return dir;
}

const RecomputedSchema = z.object({ logprobs: z.array(z.array(z.number())), ranks: z.array(z.array(z.number().int())) });
export type Recomputed = z.infer<typeof RecomputedSchema>;

/** One token sequence to score: the tokens from `start` on, each given the ones before it. */
export interface ScoredSequence {
  ids: number[];
  start: number;
  temperature: number;
}

/** Log-probs (log_softmax(logits / T)) and logit ranks recomputed by transformers on the CPU. */
export async function recomputeLogprobs(modelDir: string, sequences: ScoredSequence[]): Promise<Recomputed> {
  return RecomputedSchema.parse(JSON.parse(await runTinyQwen3(['logprobs', modelDir], JSON.stringify({ sequences }))));
}

export interface RealVllmOptions {
  modelDir: string;
  /** Log-probs after temperature and top-k/top-p (`--logprobs-mode processed_logprobs`). Default false (raw). */
  processedLogprobs?: boolean;
  /** `--max-model-len`. Default 2,048. */
  maxModelLen?: number;
  /** Publishes KV-cache events on these local ports (`--kv-events-config`, zmq, topic `kv`). Default off. */
  kvEvents?: { port: number; replayPort: number };
  /** `--num-gpu-blocks-override`: the KV cache's exact size in blocks. Default vLLM's (from VLLM_CPU_KVCACHE_SPACE, 1 GiB). */
  numGpuBlocks?: number;
  /** `--max-num-seqs`: requests running at once. Default vLLM's. */
  maxNumSeqs?: number;
  /** `--max-num-batched-tokens`: tokens one engine step may process. Default vLLM's. */
  maxNumBatchedTokens?: number;
  /** `VLLM_SERVER_DEV_MODE=1`, which serves the development endpoints (`POST /reset_prefix_cache`). Default off. */
  devMode?: boolean;
  /**
   * `VLLM_CPU_OMP_THREADS_BIND`: the CPU ids the model runs on, e.g. `"1"`. Default vLLM's `auto`,
   * which on a 2-core machine puts every instance on core 0 (core 1 kept for the rest), so two
   * instances take turns on one core and slow each other unevenly.
   */
  cpus?: string;
  /**
   * The nice value of the engine's processes (engine core and model worker, every thread), set
   * once the server is up; the API server keeps its own. Default 0. While it generates, vLLM keeps
   * both cores of a 2-core machine busy, and a test process beside it waited up to 3.6 s for a CPU.
   * The API server stays un-niced: starved, it streams nothing until a request ends (its output
   * loop runs ahead of the response writers while the engine keeps producing).
   */
  engineNiceness?: number;
  /**
   * Pins the engine core to the model worker's CPUs once the server is up. The engine core spins
   * while it waits on the worker: unpinned, one server keeps both cores of a 2-core machine busy
   * and its own API server (and anything beside it) waits for a CPU. Default off.
   */
  pinEngineCore?: boolean;
}

export interface RealVllm {
  url: string;
  /** Everything the server printed so far. */
  output(): string;
  /** Stops the server and every process it started (its process group). */
  close(): Promise<void>;
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())));
}

/** The server's other processes (its process group but the leader): engine core and model worker. */
function engineProcesses(leader: number): number[] {
  const pids: number[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    if (procStat(pid)?.pgrp === leader && Number(pid) !== leader) pids.push(Number(pid));
  }
  return pids;
}

/**
 * Sets the nice value of every thread of the engine's processes: setpriority on Linux applies to
 * one thread, and the model's threads already exist.
 */
function reniceEngine(pids: number[], niceness: number): void {
  for (const pid of pids) {
    // A process or thread may end while it is read or reniced: it needs no nice value then.
    try {
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        try {
          os.setPriority(Number(tid), niceness);
        } catch {
          // The thread ended.
        }
      }
    } catch {
      // The process ended.
    }
  }
}

/**
 * Pins every thread of the engine's processes to the CPUs of the one bound narrowest: the model
 * worker, which vLLM binds to its OMP CPUs (`taskset -a`: every thread).
 */
function pinEngineToModelCpus(pids: number[]): void {
  const allowed = pids.flatMap((pid) => {
    try {
      return [allowedCpus(pid)];
    } catch {
      return [];
    }
  });
  const cpus = allowed.filter((list) => list.length > 0).sort((x, y) => x.length - y.length)[0];
  if (cpus === undefined) throw new Error('vLLM runs no engine process to pin');
  for (const pid of pids) {
    try {
      execFileSync('taskset', ['-a', '-p', '-c', cpus.join(','), String(pid)], { stdio: 'ignore' });
    } catch {
      // The process ended.
    }
  }
}

/**
 * Starts vLLM's OpenAI server (CPU build) on a free port of 127.0.0.1 and resolves once `/health`
 * answers 200; rejects with the server's output if it exits first. `vllm serve` is broken in the
 * vllm-cpu package, hence the module entry point.
 */
export async function startRealVllm(options: RealVllmOptions): Promise<RealVllm> {
  const python = requireVllmPython();
  const port = await freePort();
  const args = [
    '-m', 'vllm.entrypoints.openai.api_server',
    '--model', options.modelDir,
    '--served-model-name', SERVED_MODEL,
    '--host', '127.0.0.1',
    '--port', String(port),
    '--dtype', 'float32',
    '--max-model-len', String(options.maxModelLen ?? 2048),
    '--enable-prompt-tokens-details',
    ...(options.processedLogprobs ? ['--logprobs-mode', 'processed_logprobs'] : []),
    ...(options.numGpuBlocks !== undefined ? ['--num-gpu-blocks-override', String(options.numGpuBlocks)] : []),
    ...(options.maxNumSeqs !== undefined ? ['--max-num-seqs', String(options.maxNumSeqs)] : []),
    ...(options.maxNumBatchedTokens !== undefined ? ['--max-num-batched-tokens', String(options.maxNumBatchedTokens)] : []),
    ...(options.kvEvents ? ['--kv-events-config', JSON.stringify({ enable_kv_cache_events: true, publisher: 'zmq', endpoint: `tcp://*:${options.kvEvents.port}`, replay_endpoint: `tcp://127.0.0.1:${options.kvEvents.replayPort}`, topic: 'kv' })] : []),
  ];
  // Its own process group, so close() reaches the engine core and any worker it forks.
  const child = spawn(python, args, {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...OFFLINE_ENV, VLLM_CPU_KVCACHE_SPACE: '1', ...(options.devMode ? { VLLM_SERVER_DEV_MODE: '1' } : {}), ...(options.cpus !== undefined ? { VLLM_CPU_OMP_THREADS_BIND: options.cpus } : {}) },
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  // Should the test process end before close() (a timed-out hook), the server ends with it.
  const killGroup = () => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // Already gone.
    }
  };
  process.once('exit', killGroup);
  const url = `http://127.0.0.1:${port}`;
  const close = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGTERM');
    const stopped = await Promise.race([exited(child).then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 15_000).unref())]);
    if (!stopped) process.kill(-child.pid!, 'SIGKILL');
    await exited(child);
    // The group may outlive its leader for a moment: make sure nothing of it is left.
    killGroup();
    process.off('exit', killGroup);
  };
  let gone = false;
  void exited(child).then(() => (gone = true));
  for (;;) {
    if (gone) {
      killGroup();
      throw new VllmStartError(`vLLM exited (${child.exitCode ?? child.signalCode}) before it was healthy:\n${output}`);
    }
    const healthy = await fetch(`${url}/health`).then((r) => r.ok, () => false);
    if (healthy) {
      const engine = engineProcesses(child.pid!);
      if (options.engineNiceness) reniceEngine(engine, options.engineNiceness);
      if (options.pinEngineCore) pinEngineToModelCpus(engine);
      return { url, output: () => output, close };
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}
