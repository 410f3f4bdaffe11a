import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ProcessStatsSnapshot } from '../../gateway/process-stats.js';
import type { CpuPlan } from './cpus.js';
import { onCpus } from './cpus.js';
import { ChildStartError, type Child, type Children } from './processes.js';
import { MODEL, TASK_MATCH } from './load.js';
import { ConfigSchema } from '../../stack/config.js';
import { gatewayNodeFlags } from '../../stack/roles/gateway-processes.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const ADMIN_TOKEN = 'bench-admin-token';
/** LiteLLM refuses to start without one; the load generator sends it as its bearer token. */
export const LITELLM_KEY = 'sk-bench-litellm-0123456789abcdef';
const LITELLM_BIN = path.join(ROOT, '.tools/litellm/bin/litellm');

export interface Service {
  child: Child;
  url: string;
}

/**
 * The engine's KV cache, tokens: room for every session's whole context at once (256 x ~36k), so the
 * router's KV admission (which holds calls that would evict other chains' prefixes, bench:routing
 * measures it) never waits here and the latency added is the gateway's own.
 */
export const KV_CAPACITY_TOKENS = 16_000_000;

/** Extra node flags for the engine process (BENCH_ENGINE_NODE_ARGS, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof-engine`). */
const ENGINE_NODE_ARGS = (process.env.BENCH_ENGINE_NODE_ARGS ?? '').split(' ').filter(Boolean);

/** engine-sim in its own process at time scale 0, scripted to answer every turn with a `shell` call. */
export async function startEngine(children: Children, dir: string, turns: number, cpus: CpuPlan): Promise<Service> {
  const script = {
    wanderProbability: 0,
    tasks: [{ taskId: 'bench', match: TASK_MATCH, solve: Array.from({ length: turns + 1 }, () => ({ thought: 'Look further.', tool: { name: 'shell', arguments: { command: 'grep -rn handler src' } } })) }],
  };
  const scriptFile = path.join(dir, 'script.json');
  writeFileSync(scriptFile, JSON.stringify(script));
  const child = children.start('engine-sim', ...onCpus(cpus.rest, process.execPath, [...ENGINE_NODE_ARGS, '--import', 'tsx', path.join(ROOT, 'engine-sim/main.ts'), '--script', scriptFile, '--time-scale', '0', '--kv-capacity', String(KV_CAPACITY_TOKENS)]), path.join(dir, 'engine-sim.log'));
  return { child, url: await children.waitForLine(child, /^(http\S+)\s*$/m, 120_000) };
}

/** Extra node flags for the gateway processes (BENCH_GATEWAY_NODE_ARGS, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`). */
const GATEWAY_NODE_ARGS = (process.env.BENCH_GATEWAY_NODE_ARGS ?? '').split(' ').filter(Boolean);
/**
 * How the gateway processes collect garbage (BENCH_GATEWAY_GC): `single` (default) as the README
 * says to run a gateway (`--single-threaded-gc`, what `gateway.singleThreadedGc` gives forked
 * processes), `parallel` with V8's background GC threads. Either way with the configuration's
 * default young generation (`gateway.maxSemiSpaceMiB`).
 */
export const GATEWAY_GC = gatewayGc(process.env.BENCH_GATEWAY_GC ?? 'single');
/**
 * The gateway configuration's node flags (with --expose-gc for the stats route's collection): the
 * in-process gateway takes them on its command line, forked gateway processes from the configuration.
 */
const GATEWAY_FLAGS = { singleThreadedGc: GATEWAY_GC === 'single', nodeArgs: ['--expose-gc', ...GATEWAY_NODE_ARGS] };

function gatewayGc(value: string): 'single' | 'parallel' {
  if (value !== 'single' && value !== 'parallel') throw new Error(`BENCH_GATEWAY_GC is single or parallel, not ${JSON.stringify(value)}`);
  return value;
}

/** How the gateway's command is run: as it is, or wrapped (e.g. under a CPU quota, `cpu-quota.ts`). */
export type Launch = (name: string, command: [string, string[]]) => Promise<[string, string[]]>;

/** A running `rollout gateway`: its process (with its gateway processes, when it forked any) and every process's URL. */
export interface Gateway {
  child: Child;
  urls: string[];
}

/**
 * `rollout gateway` with `gateway.processes: processes` (with `GATEWAY_FLAGS`), on its own SQLite
 * store, routing to the engine. With one process the gateway runs in it; with more, it forks them
 * and runs the placement service they all place through, as a deployment of `gateway.processes` does.
 */
export async function startGateway(children: Children, dir: string, engineUrl: string, processes: number, tag: string, cpus: CpuPlan, launch: Launch = async (_, command) => command): Promise<Gateway> {
  const name = `gateway-${tag}`;
  const config = {
    dataDir: path.join(dir, 'data'),
    store: { url: path.join(dir, 'store.sqlite') },
    engines: [{ name: 'e0', kind: 'vllm', url: engineUrl, kvCapacityTokens: KV_CAPACITY_TOKENS }],
    gateway: { host: '127.0.0.1', port: 0, adminToken: ADMIN_TOKEN, replicaId: `bench-${tag}`, processes, ...GATEWAY_FLAGS },
  };
  const configFile = path.join(dir, `${name}.json`);
  writeFileSync(configFile, JSON.stringify(config));
  const command = await launch(name, onCpus(cpus.middlebox, process.execPath, [...gatewayNodeFlags({ ...ConfigSchema.shape.gateway.parse(undefined), ...GATEWAY_FLAGS }), path.join(ROOT, 'cli/bin.mjs'), 'gateway', '--config', configFile]));
  const child = children.start(name, ...command, path.join(dir, `${name}.log`));
  const urls = (await children.waitForLine(child, /gateway listening on ([^;]+);/, 120_000)).split(' ');
  if (urls.length !== processes) throw new ChildStartError(`${name} listens on ${urls.length} URLs, not ${processes}: ${urls.join(' ')}`);
  return { child, urls };
}

/**
 * The bare Node proxy (bench/gateway/node-proxy.ts): the floor of a Node middlebox on this traffic,
 * on the gateway's CPUs, answering the LiteLLM key.
 */
export async function startNodeProxy(children: Children, dir: string, engineUrl: string, cpus: CpuPlan): Promise<Service> {
  const child = children.start('node-proxy', ...onCpus(cpus.middlebox, process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench/gateway/node-proxy.ts'), engineUrl, LITELLM_KEY]), path.join(dir, 'node-proxy.log'));
  return { child, url: await children.waitForLine(child, /^(http\S+)\s*$/m, 120_000) };
}

export type GatewayStats = ProcessStatsSnapshot & { liveSessions: number; collected: boolean };

export async function gatewayStats(url: string, query: string): Promise<GatewayStats> {
  const r = await fetch(`${url}/admin/v1/stats${query}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  if (!r.ok) throw new Error(`${url}/admin/v1/stats answered ${r.status}: ${await r.text()}`);
  return (await r.json()) as GatewayStats;
}

/**
 * Makes sure LiteLLM is installed in .tools/litellm and runs (scripts/install-litellm.sh: quick when
 * it is, and it reinstalls a venv that was moved, whose scripts point at its old path).
 */
export function ensureLitellm(log: (line: string) => void): boolean {
  if (!existsSync(LITELLM_BIN)) log('LiteLLM is not installed: running scripts/install-litellm.sh (a few minutes, once)');
  const r = spawnSync('bash', [path.join(ROOT, 'scripts/install-litellm.sh')], { stdio: 'inherit' });
  return r.status === 0 && existsSync(LITELLM_BIN);
}

/**
 * The LiteLLM proxy as a plain chat pass-through: one model routed to the engine's own
 * `/v1/chat/completions` (`hosted_vllm/`), no database, no telemetry, quiet logs.
 */
export async function startLitellm(children: Children, dir: string, engineUrl: string, port: number, cpus: CpuPlan): Promise<Service> {
  const configFile = path.join(dir, 'litellm.yaml');
  writeFileSync(
    configFile,
    JSON.stringify({
      model_list: [{ model_name: MODEL, litellm_params: { model: `hosted_vllm/${MODEL}`, api_base: `${engineUrl}/v1`, api_key: 'none' } }],
      litellm_settings: { telemetry: false, drop_params: true, set_verbose: false },
      general_settings: { master_key: LITELLM_KEY },
    }),
  );
  const env = { ...process.env, LITELLM_LOG: 'ERROR', LITELLM_TELEMETRY: 'False', DISABLE_ADMIN_UI: 'True', NO_DOCS: 'True' };
  const child = children.start('litellm', ...onCpus(cpus.middlebox, LITELLM_BIN, ['--config', configFile, '--host', '127.0.0.1', '--port', String(port)]), path.join(dir, 'litellm.log'), env);
  // Its banner is not needed; drain stdout so the pipe never fills.
  child.process.stdout!.resume();
  const url = `http://127.0.0.1:${port}`;
  const deadline = performance.now() + 180_000;
  while (performance.now() < deadline) {
    if (child.process.exitCode !== null) throw new ChildStartError(`litellm exited with ${child.process.exitCode} (log: ${child.logFile})`);
    try {
      if ((await fetch(`${url}/health/liveliness`)).ok) return { child, url };
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new ChildStartError(`litellm not ready after 180 s (log: ${child.logFile})`);
}
