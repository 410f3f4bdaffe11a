import { Client, Connection } from '@temporalio/client';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { TaskCatalog } from '../activities/task-catalog.js';
import type { InstanceConfig } from '../scheduler/index.js';
import type { Store } from '../trajectory/index.js';
import { createMetrics, type RolloutMetrics } from '../telemetry/metrics.js';
import { hostQueueOf, type RolloutWorker } from '../workers/worker.js';
import type { Config } from './config.js';
import { checkEngines } from './engine-check.js';
import { dataPaths, makeDataDirs } from './paths.js';
import { startApi } from './roles/api.js';
import { loadConfiguredCodec } from './roles/codec.js';
import { startEngines } from './roles/engines.js';
import { gatewaysListening, startGateways } from './roles/gateway-processes.js';
import { gatewayUrls } from './roles/placement.js';
import { startWorker } from './roles/worker.js';
import { apiToken, gatewayAdminToken } from './secrets.js';
import { openConfiguredStore } from './store.js';
import { Stops } from './stops.js';
import { startDevServer } from './temporal-dev-server.js';
import { temporalConnectionOptions } from './temporal-connection.js';

/** A running agent-rollout: what the CLI, the tests and the benchmarks talk to. */
export interface Stack {
  config: Config;
  temporalAddress: string;
  uiUrl: string | null;
  /** The first of `gatewayUrls`. */
  gatewayUrl: string;
  /** The gateways the stack's clients call: the `gateway.processes` it runs, `gateway.urls`, or `gateway.url`. */
  gatewayUrls: string[];
  /** The trainer-facing HTTP batch API. */
  apiUrl: string;
  /** Its bearer token (`api.token`, or the one minted in the data directory). */
  apiToken: string;
  engines: InstanceConfig[];
  client: Client;
  store: Store;
  /** Present when this process runs a worker. */
  worker: RolloutWorker | undefined;
  /** Every role's metrics in this process, on one registry (what each `/metrics` serves). */
  metrics: RolloutMetrics;
  /** The worker's metrics listener (`worker.metricsPort`), when it runs one. */
  workerMetricsUrl: string | undefined;
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
 * Every role in one process (`rollout dev`, `rollout demo`, the tests): the embedded Temporal dev
 * server when no address is given, simulated engines when none are configured, the gateway (or its
 * `gateway.processes`) unless `gateway.url` names one elsewhere, the batch API, and (by default) a worker, all sharing one
 * store and codec. `stop()` takes them down in reverse order.
 */
export async function startStack(config: Config, parts: StackParts = {}): Promise<Stack> {
  const log = parts.log ?? (() => undefined);
  // A missing secret fails here, before anything starts.
  gatewayAdminToken(config);
  const token = apiToken(config);
  const paths = dataPaths(config.dataDir);
  makeDataDirs(config.dataDir);
  const stops = new Stops();
  // One registry for the process: its gateway, API and worker count into it, each `/metrics` shows it.
  const metrics = createMetrics();
  try {
    let devServerAddress: string | undefined;
    let uiUrl: string | null = null;
    if (!config.temporal.address) {
      log(`starting the Temporal dev server (state in ${paths.temporal})`);
      const devServer = await startDevServer({
        dataDir: paths.temporal,
        port: config.temporal.devServer.port,
        uiPort: config.temporal.devServer.uiPort,
      });
      stops.push(() => devServer.stop());
      devServerAddress = devServer.address;
      uiUrl = devServer.uiUrl;
    }
    const temporal = temporalConnectionOptions(config, devServerAddress);

    const codec = await loadConfiguredCodec(config);
    const tasks = new TaskCatalog();
    let configured: InstanceConfig[] = config.engines;
    if (configured.length === 0) {
      log(`starting ${config.engineSim.instances} simulated engines`);
      const sims = await startEngines(config, { tasks });
      stops.push(() => sims.stop());
      configured = sims.instances;
    }
    const engines = await checkEngines(configured, config.model.name, log);

    const store = await openConfiguredStore(config);
    stops.push(() => store.close());
    let started: string[] | undefined;
    let isAvailable: ((instance: string) => boolean) | undefined;
    if (!config.gateway.url) {
      const gateways = await startGateways(config, { store, codec, engines, metrics });
      stops.push(() => gateways.stop());
      started = gateways.urls;
      // The worker admits episodes to engines the gateways' router finds healthy.
      isAvailable = gateways.isAvailable;
      log(gatewaysListening(gateways));
    }
    const urls = gatewayUrls(config, started);

    const connection = await Connection.connect(temporal);
    stops.push(() => connection.close());
    const client = new Client({ connection, namespace: config.temporal.namespace });

    const api = await startApi(config, { client, gatewayUrls: urls, store, metrics });
    stops.push(() => api.stop());
    log(`batch API listening on ${api.url} (OpenAPI at ${api.url}/openapi.json)`);

    let worker: RolloutWorker | undefined;
    let workerMetricsUrl: string | undefined;
    if (parts.worker ?? true) {
      const role = await startWorker(config, {
        temporalAddress: temporal.address,
        gatewayUrls: urls,
        engines,
        isAvailable,
        store,
        tasks,
        codec,
        workflowBundle: parts.workflowBundle,
        metrics,
      });
      stops.push(() => role.stop());
      worker = role.worker;
      workerMetricsUrl = role.metricsUrl;
      log(
        `worker polling ${config.temporal.taskQueue} and ${hostQueueOf(config.temporal.taskQueue, config.worker.hostId)}`,
      );
    }
    return {
      config,
      temporalAddress: temporal.address,
      uiUrl,
      gatewayUrl: urls[0]!,
      gatewayUrls: urls,
      apiUrl: api.url,
      apiToken: token,
      engines,
      client,
      store,
      worker,
      metrics,
      workerMetricsUrl,
      stop: () => stops.run(),
    };
  } catch (error) {
    await stops.run();
    throw error;
  }
}
