import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { FastifyInstance } from 'fastify';
import { mkdirSync } from 'node:fs';
import { createActivities } from '../activities/index.js';
import { TaskCatalog } from '../activities/task-catalog.js';
import { startEngineSim, type EngineSim } from '../engine-sim/index.js';
import { loadCodec, type Codec } from '../gateway/codec/index.js';
import { buildGateway } from '../gateway/server.js';
import { AdmissionControl, type InstanceConfig } from '../scheduler/index.js';
import { createSandboxProvider } from '../sandbox/index.js';
import { bubblewrapTmpHostDir } from '../sandbox/bridge.js';
import { scriptForTask } from '../tasks/solution-script.js';
import { SqliteStore, type Store } from '../trajectory/index.js';
import { hostQueueOf, installWorkerRuntime, RolloutWorker } from '../workers/worker.js';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { ConfigError, type Config } from './config.js';
import { buildApiServer } from '../api/index.js';
import { adminToken, dataPaths } from './paths.js';
import { startDevServer, type DevServer } from './temporal-dev-server.js';
import { PROJECT_ROOT } from './temporal-binary.js';
import { gatewayReplica, gatewayRouter, gatewayUrls } from './roles/placement.js';

/** A running agent-rollout: what the CLI, the tests and the benchmarks talk to. */
export interface Stack {
  config: Config;
  temporalAddress: string;
  uiUrl: string | null;
  gatewayUrl: string;
  /** The trainer-facing HTTP batch API. */
  apiUrl: string;
  engines: InstanceConfig[];
  client: Client;
  store: Store;
  /** Present when this process runs a worker. */
  worker: RolloutWorker | undefined;
  stop(): Promise<void>;
}

export interface StackParts {
  /** Run a worker in this process. Default true. */
  worker?: boolean;
  /** Reuse a workflow bundle (tests build it once). */
  workflowBundle?: WorkflowBundleWithSourceMap;
  /** Progress lines (start-up steps). Default: none. */
  log?: (line: string) => void;
}

/**
 * The engines a process that does not start them (a separate worker) should know: the configured
 * ones, else the simulated ones at their fixed ports.
 */
export function configuredInstances(config: Config): InstanceConfig[] {
  if (config.engines.length > 0) return config.engines;
  const sim = config.engineSim;
  return Array.from({ length: sim.instances }, (_, i) => ({
    name: `sim-${i}`,
    kind: 'vllm' as const,
    url: `http://127.0.0.1:${sim.basePort + i}`,
    kvCapacityTokens: sim.kvCapacityTokens,
  }));
}

/** Starts the simulated engines of the configuration, one per instance, on consecutive ports. */
async function startSimulatedEngines(config: Config, codec: Codec, tasks: TaskCatalog): Promise<{ sims: EngineSim[]; instances: InstanceConfig[] }> {
  const sim = config.engineSim;
  const source = await tasks.load(sim.tasks);
  const script = { tasks: [...source.values()].map(scriptForTask), wanderProbability: sim.wanderProbability };
  const sims: EngineSim[] = [];
  for (let i = 0; i < sim.instances; i++) {
    sims.push(
      await startEngineSim({
        tokenizer: codec.tokenizer,
        script,
        port: sim.basePort === 0 ? 0 : sim.basePort + i,
        modelName: config.model.name,
        kvCapacityTokens: sim.kvCapacityTokens,
        timeScale: sim.timeScale,
        seed: sim.seed + i,
      }),
    );
  }
  const instances = configuredInstances(config).map((instance, i) => ({ ...instance, url: sims[i]!.url }));
  return { sims, instances };
}

/**
 * Starts what the configuration asks for: the embedded Temporal dev server when no address is
 * given, simulated engines when none are configured, the gateway, and (by default) a worker.
 * `stop()` takes them down in reverse order.
 */
export async function startStack(config: Config, parts: StackParts = {}): Promise<Stack> {
  const log = parts.log ?? (() => undefined);
  const paths = dataPaths(config.dataDir);
  for (const dir of [paths.dataDir, paths.sandboxes, paths.agentState, paths.agentLogs, paths.exports]) mkdirSync(dir, { recursive: true });
  const stops: (() => Promise<void>)[] = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch((e: unknown) => console.error(`stop: ${(e as Error).message}`));
  };
  try {
    let devServer: DevServer | undefined;
    let temporalAddress = config.temporal.address;
    if (!temporalAddress) {
      log(`starting the Temporal dev server (state in ${paths.temporal})`);
      devServer = await startDevServer({ dataDir: paths.temporal, port: config.temporal.devServer.port, uiPort: config.temporal.devServer.uiPort });
      stops.push(() => devServer!.stop());
      temporalAddress = devServer.address;
    }

    const codec = await loadCodec({
      modelDir: config.model.dir ?? undefined,
      enableThinking: config.model.enableThinking,
      toolParser: config.model.toolParser,
    });
    const tasks = new TaskCatalog();
    let engines: InstanceConfig[] = config.engines;
    if (engines.length === 0) {
      log(`starting ${config.engineSim.instances} simulated engines`);
      const { sims, instances } = await startSimulatedEngines(config, codec, tasks);
      stops.push(async () => void (await Promise.all(sims.map((s) => s.close()))));
      engines = instances;
    }

    const store = SqliteStore.open(paths.store);
    stops.push(() => store.close());
    const token = adminToken(config.dataDir);
    let gatewayUrl = config.gateway.url;
    let isAvailable: ((instance: string) => boolean) | undefined;
    if (!gatewayUrl) {
      const router = gatewayRouter(config, engines);
      // A worker in this process admits episodes to engines the gateway's router finds healthy.
      isAvailable = (instance) => router.registry.isHealthy(instance);
      const gateway: FastifyInstance = await buildGateway({ codec, store, engines, modelName: config.model.name, adminToken: token, router, replica: gatewayReplica(config) });
      await gateway.listen({ host: config.gateway.host, port: config.gateway.port });
      stops.push(() => gateway.close());
      const address = gateway.server.address();
      const port = typeof address === 'object' && address ? address.port : config.gateway.port;
      gatewayUrl = `http://${config.gateway.host}:${port}`;
      log(`gateway listening on ${gatewayUrl}`);
    }

    const connection = await Connection.connect({ address: temporalAddress });
    stops.push(() => connection.close());
    const client = new Client({ connection, namespace: config.temporal.namespace });

    const api = buildApiServer({ config, client, exportDir: paths.exports, gateway: { urls: gatewayUrls(config, gatewayUrl), adminToken: token } });
    await api.listen({ host: config.api.host, port: config.api.port });
    stops.push(() => api.close());
    const apiAddress = api.server.address();
    const apiUrl = `http://${config.api.host}:${typeof apiAddress === 'object' && apiAddress ? apiAddress.port : config.api.port}`;
    log(`batch API listening on ${apiUrl} (OpenAPI at ${apiUrl}/openapi.json)`);

    let worker: RolloutWorker | undefined;
    if (parts.worker ?? true) {
      worker = await startWorker(config, { temporalAddress, gatewayUrl, engines, isAvailable, store, tasks, workflowBundle: parts.workflowBundle, stops });
      log(`worker polling ${config.temporal.taskQueue} and ${hostQueueOf(config.temporal.taskQueue, config.worker.hostId)}`);
    }
    return { config, temporalAddress, uiUrl: devServer?.uiUrl ?? null, gatewayUrl, apiUrl, engines, client, store, worker, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Starts a rollout worker in this process; its shutdown is pushed onto `stops`. */
export async function startWorker(
  config: Config,
  ctx: {
    temporalAddress: string;
    gatewayUrl: string;
    engines: InstanceConfig[];
    /** Whether an engine may take new episodes (the gateway's health view). Default: every engine. */
    isAvailable?: (instance: string) => boolean;
    store: Store;
    tasks: TaskCatalog;
    workflowBundle?: WorkflowBundleWithSourceMap;
    stops: (() => Promise<void>)[];
  },
): Promise<RolloutWorker> {
  const paths = dataPaths(config.dataDir);
  const hostQueue = hostQueueOf(config.temporal.taskQueue, config.worker.hostId);
  const sandbox = createSandboxProvider({
    provider: config.sandbox.provider,
    rootDir: paths.sandboxes,
    hiddenPaths: [PROJECT_ROOT, config.dataDir],
    createFailureRate: config.sandbox.createFailureRate,
    seed: config.sandbox.faultSeed,
    defaultTtlMs: config.sandbox.ttlMs,
    defaultLimits: config.sandbox.limits,
  });
  // Stops run in reverse: this runs after the worker has stopped using the provider.
  ctx.stops.push(async () => sandbox.release?.());
  const activities = createActivities({
    store: ctx.store,
    admission: await AdmissionControl.create(ctx.store, ctx.engines, config.admission, ctx.isAvailable),
    sandbox,
    tasks: ctx.tasks,
    gateway: { urls: gatewayUrls(config, ctx.gatewayUrl), adminToken: adminToken(config.dataDir) },
    hostQueue,
    agentStateDir: paths.agentState,
    exportDir: paths.exports,
    maxOutputBytes: config.agent.maxOutputBytes,
    sandboxTtlMs: config.sandbox.ttlMs,
    sandboxTmpHostDir: bubblewrapTmpHostDir(paths.sandboxes),
    agentLogDir: paths.agentLogs,
  });
  installWorkerRuntime();
  const connection = await NativeConnection.connect({ address: ctx.temporalAddress });
  const worker = await RolloutWorker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    hostQueue,
    activities,
    workflowBundle: ctx.workflowBundle,
    maxConcurrentActivities: config.worker.maxConcurrentActivities,
    maxConcurrentWorkflowTasks: config.worker.maxConcurrentWorkflowTasks,
    janitor: { provider: sandbox, intervalMs: config.sandbox.janitorIntervalMs },
  });
  const running = worker.run().catch((error: unknown) => {
    console.error(`worker stopped: ${(error as Error).message}`);
  });
  ctx.stops.push(async () => {
    worker.shutdown();
    await running;
    await connection.close();
  });
  return worker;
}

/**
 * A worker process joining a running stack (`rollout worker`): it needs the Temporal address and
 * the gateway URL, and shares the stack's data directory (store, scheduler, sandboxes).
 */
export async function startStandaloneWorker(config: Config): Promise<{ worker: RolloutWorker; stop(): Promise<void> }> {
  if (!config.temporal.address) throw new ConfigError('a standalone worker needs temporal.address');
  if (!config.gateway.url) throw new ConfigError('a standalone worker needs gateway.url');
  const stops: (() => Promise<void>)[] = [];
  const store = SqliteStore.open(dataPaths(config.dataDir).store);
  stops.push(() => store.close());
  const worker = await startWorker(config, {
    temporalAddress: config.temporal.address,
    gatewayUrl: config.gateway.url,
    engines: configuredInstances(config),
    store,
    tasks: new TaskCatalog(),
    stops,
  });
  return {
    worker,
    async stop() {
      for (const s of stops.reverse()) await s();
    },
  };
}
