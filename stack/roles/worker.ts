import { startTracing } from '../../telemetry/tracing.js';
import { NativeConnection, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createActivities } from '../../activities/index.js';
import { createEngineJudge } from '../../activities/judge-engine.js';
import type { Codec } from '../../gateway/codec/index.js';
import { TaskCatalog } from '../../activities/task-catalog.js';
import { AdmissionControl, type InstanceConfig } from '../../scheduler/index.js';
import { bubblewrapTmpHostDir } from '../../sandbox/bridge.js';
import { createSandboxProvider } from '../../sandbox/index.js';
import { BASE_IMAGE, LocalImageStore } from '../../sandbox/images/index.js';
import type { Store } from '../../trajectory/index.js';
import { startMetricsListener } from '../../telemetry/exposition.js';
import { createMetrics, type RolloutMetrics } from '../../telemetry/metrics.js';
import { hostQueueOf, installWorkerRuntime, RolloutWorker } from '../../workers/worker.js';
import { ConfigError, type Config } from '../config.js';
import { openConfiguredArtifacts } from '../artifacts.js';
import { startEngineHealth } from '../engine-health.js';
import { dataPaths, makeDataDirs } from '../paths.js';
import { gatewayAdminToken } from '../secrets.js';
import { openConfiguredStore } from '../store.js';
import { withStops } from '../stops.js';
import { PROJECT_ROOT } from '../temporal-binary.js';
import { temporalConnectionOptions } from '../temporal-connection.js';
import { loadConfiguredCodec } from './codec.js';
import { configuredInstances } from './engines.js';
import { checkEngines } from '../engine-check.js';
import { gatewayUrls } from './placement.js';

export interface WorkerRole {
  worker: RolloutWorker;
  /** The metrics listener's URL (`worker.metricsPort`), when it runs one. */
  metricsUrl: string | undefined;
  stop(): Promise<void>;
}

/** What a worker may share with the rest of its process; each left out it makes itself. */
export interface WorkerShared {
  /** Temporal front end; default `temporal.address`. */
  temporalAddress?: string;
  /** The gateways this process runs, if any (`gatewayUrls` of roles/placement.ts). Default: `gateway.urls`, else `gateway.url`. */
  gatewayUrls?: readonly string[];
  /** Default: the configured engines (`configuredInstances`), checked (`checkEngines`). */
  engines?: InstanceConfig[];
  /** Whether an engine may take new episodes (a gateway's health view in this process). Default: the worker's own health checks. */
  isAvailable?: (instance: string) => boolean;
  /** Default: its own, from `store.url`. */
  store?: Store;
  tasks?: TaskCatalog;
  /** The model's codec, for the model judge. Default: its own, from `model.*`. */
  codec?: Codec;
  /** Reuse a workflow bundle (tests build it once). */
  workflowBundle?: WorkflowBundleWithSourceMap;
  /** The process's metrics. Default: its own. */
  metrics?: RolloutMetrics;
}

/**
 * A rollout worker: polls the shared queue and its host queue (`worker.hostId`), with its
 * sandboxes, agent state and host registration. Standalone (`rollout worker`) it needs
 * `temporal.address` and `gateway.url`, opens its own store, and checks the engines' health itself
 * so that it never admits an episode to a dead engine. With `worker.metricsPort` it serves its
 * metrics (`GET /metrics`, behind the gateway admin token).
 */
export function startWorker(config: Config, shared: WorkerShared = {}): Promise<WorkerRole> {
  const urls = gatewayUrls(config, shared.gatewayUrls);
  if (urls.length === 0)
    throw new ConfigError('a worker joining a running stack needs gateway.url or gateway.urls');
  if (!shared.temporalAddress && !config.temporal.address)
    throw new ConfigError('a worker joining a running stack needs temporal.address');
  const connectionOptions = temporalConnectionOptions(config, shared.temporalAddress);
  const gateway = { urls, adminToken: gatewayAdminToken(config) };
  return withStops(async (stops) => {
    // First in, so its stop comes last: spans of the worker's last activities are flushed.
    stops.push(startTracing({ otlpEndpoint: config.telemetry.otlpEndpoint, serviceName: 'agent-rollout-worker' }));
    const paths = dataPaths(config.dataDir);
    makeDataDirs(config.dataDir);
    const engines = shared.engines ?? (await checkEngines(configuredInstances(config), config.model.name, (line) => console.warn(line)));
    let store = shared.store;
    if (!store) {
      const own = await openConfiguredStore(config);
      stops.push(() => own.close());
      store = own;
    }
    let isAvailable = shared.isAvailable;
    if (!isAvailable) {
      const health = await startEngineHealth(engines, config.routing);
      stops.push(() => health.stop());
      isAvailable = health.isAvailable;
    }
    const artifacts = openConfiguredArtifacts(config);
    stops.push(() => artifacts.close());
    const hostQueue = hostQueueOf(config.temporal.taskQueue, config.worker.hostId);
    const images = new LocalImageStore({
      cacheDir: config.sandbox.images.cacheDir ?? paths.images,
      insecureRegistries: config.sandbox.images.insecureRegistries,
      authFile: config.sandbox.images.authFile,
      log: (line) => console.error(`images: ${line}`),
    });
    // Every task without an image of its own runs on the base image: without it, fail here, not per episode.
    await images.resolve(BASE_IMAGE).catch((err: unknown) => {
      throw new ConfigError((err as Error).message);
    });
    const sandbox = createSandboxProvider({
      provider: config.sandbox.provider,
      rootDir: paths.sandboxes,
      hiddenPaths: [PROJECT_ROOT, config.dataDir],
      images,
      createFailureRate: config.sandbox.createFailureRate,
      seed: config.sandbox.faultSeed,
      defaultTtlMs: config.sandbox.ttlMs,
      defaultLimits: config.sandbox.limits,
    });
    // Stops run in reverse: this runs after the worker has stopped using the provider.
    stops.push(async () => sandbox.release?.());
    const codec = shared.codec ?? (await loadConfiguredCodec(config));
    const judge = {
      engine: createEngineJudge({
        codec,
        instances: engines,
        modelName: config.model.name,
        isAvailable,
        timeoutMs: config.judge.timeoutMs,
      }),
      prices: config.judge.prices,
    };
    const metrics = shared.metrics ?? createMetrics();
    let metricsUrl: string | undefined;
    if (config.worker.metricsPort !== null) {
      const listener = await startMetricsListener({ host: config.worker.metricsHost, port: config.worker.metricsPort, registry: metrics.registry, token: gateway.adminToken });
      stops.push(() => listener.close());
      metricsUrl = listener.url;
    }
    const activities = createActivities({
      store,
      admission: await AdmissionControl.create(store, engines, config.admission, isAvailable),
      sandbox,
      images,
      tasks: shared.tasks ?? new TaskCatalog(),
      gateway,
      gatewayOutageMs: config.limits.gatewayOutageMs,
      hostQueue,
      agentStateDir: paths.agentState,
      artifacts,
      maxOutputBytes: config.agent.maxOutputBytes,
      sandboxTtlMs: config.sandbox.ttlMs,
      sandboxTmpHostDir: bubblewrapTmpHostDir(paths.sandboxes),
      agentLogDir: paths.agentLogs,
      hostTtlMs: config.janitor.hostTtlMs,
      judge,
      rewardScreen: config.reward.screen,
      metrics,
    });
    installWorkerRuntime();
    const connection = await NativeConnection.connect(connectionOptions);
    stops.push(() => connection.close());
    const worker = await RolloutWorker.create({
      connection,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      hostQueue,
      activities,
      workflowBundle: shared.workflowBundle,
      maxConcurrentActivities: config.worker.maxConcurrentActivities,
      maxConcurrentWorkflowTasks: config.worker.maxConcurrentWorkflowTasks,
      janitor: {
        provider: sandbox,
        agentStateDir: paths.agentState,
        store,
        hostId: config.worker.hostId,
        intervalMs: config.sandbox.janitorIntervalMs,
      },
    });
    const running = worker.run().catch((error: unknown) => {
      console.error(`worker stopped: ${(error as Error).message}`);
    });
    stops.push(async () => {
      worker.shutdown();
      await running;
    });
    return { worker, metricsUrl };
  });
}
