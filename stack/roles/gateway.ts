import { startTracing } from '../../telemetry/tracing.js';
import type { Codec } from '../../gateway/codec/index.js';
import { buildGateway } from '../../gateway/server.js';
import { inlineDriftChecker } from '../../gateway/session/drift-checker.js';
import { WorkerDriftChecker } from '../../gateway/session/drift-worker-checker.js';
import type { PlacementTransport } from '../../scheduler/placement/transport.js';
import type { Store } from '../../trajectory/index.js';
import { createMetrics, type RolloutMetrics } from '../../telemetry/metrics.js';
import type { Config } from '../config.js';
import { checkEngines, type CheckedEngine } from '../engine-check.js';
import { gatewayAdminToken } from '../secrets.js';
import { openConfiguredStore } from '../store.js';
import { withStops } from '../stops.js';
import { configuredCodecOptions, loadConfiguredCodec } from './codec.js';
import { configuredInstances } from './engines.js';
import { listenUrl } from './listen.js';
import { gatewayReplica, gatewayRouter } from './placement.js';

export interface GatewayRole {
  url: string;
  /** The router's health view: whether an engine may take new episodes now. */
  isAvailable(instance: string): boolean;
  stop(): Promise<void>;
}

/**
 * The gateway on `gateway.host:port`, routing over `engines` (default: the configured ones, checked
 * against `model.name` and read for their limits, `checkEngines`). What `shared` leaves out it makes
 * itself: the codec from `model.*`, its own store from `store.url`, its own metrics (the process's
 * when shared: `GET /metrics` then shows every role of the process). With `placement` it places
 * through the placement service that transport reaches (`gatewayRouter`).
 */
export function startGateway(
  config: Config,
  shared: { store?: Store; codec?: Codec; engines?: CheckedEngine[]; metrics?: RolloutMetrics; placement?: PlacementTransport } = {},
): Promise<GatewayRole> {
  const adminToken = gatewayAdminToken(config);
  return withStops(async (stops) => {
    // First in, so its stop comes last: spans of the last turns are flushed.
    stops.push(startTracing({ otlpEndpoint: config.telemetry.otlpEndpoint, serviceName: 'agent-rollout-gateway' }));
    const engines = shared.engines ?? (await checkEngines(configuredInstances(config), config.model.name, (line) => console.warn(line)));
    const codec = shared.codec ?? (await loadConfiguredCodec(config));
    let store = shared.store;
    if (!store) {
      const own = await openConfiguredStore(config);
      stops.push(() => own.close());
      store = own;
    }
    const metrics = shared.metrics ?? createMetrics();
    const router = gatewayRouter(config, engines, metrics.router, shared.placement);
    // Off the event loop: a closing session's drift check re-renders and re-encodes its history.
    const driftChecker = WorkerDriftChecker.start(configuredCodecOptions(config), inlineDriftChecker(codec), (line) => console.warn(line));
    stops.push(() => driftChecker.close());
    const gateway = await buildGateway({ codec, store, engines, modelName: config.model.name, adminToken, router, replica: gatewayReplica(config), maxBodyBytes: config.gateway.maxBodyBytes, metrics, driftChecker });
    stops.push(() => gateway.close());
    const url = await listenUrl(gateway, config.gateway.host, config.gateway.port);
    return { url, isAvailable: (instance: string) => router.registry.isHealthy(instance) };
  });
}
