import os from 'node:os';
import type { ReplicaOptions } from '../../gateway/replica/options.js';
import { RemoteRouter } from '../../scheduler/placement/remote-router.js';
import { startPlacementService, type PlacementService } from '../../scheduler/placement/service.js';
import { httpTransport, type PlacementTransport } from '../../scheduler/placement/transport.js';
import { createRouter, type CallRouter } from '../../scheduler/router.js';
import type { InstanceConfig } from '../../scheduler/instances.js';
import type { RouterMetrics } from '../../telemetry/metrics.js';
import type { Config } from '../config.js';
import { gatewayAdminToken } from '../secrets.js';
import { configuredInstances } from './engines.js';
import { checkEngines } from '../engine-check.js';

/**
 * `rollout placement`: the placement service every gateway replica of this configuration routes
 * through (`gateway.placementUrl`), on `gateway.placementHost:placementPort`, over the configured
 * engines (checked, `checkEngines`) with `routing.*`, behind the gateways' admin token.
 */
export async function startPlacementRole(config: Config): Promise<PlacementService> {
  return startPlacementService({
    engines: await checkEngines(configuredInstances(config), config.model.name, (line) => console.warn(line)),
    routing: config.routing,
    host: config.gateway.placementHost,
    port: config.gateway.placementPort,
    token: gatewayAdminToken(config),
  });
}

/**
 * The router of a gateway replica: the placement service over `placement` (a forked gateway
 * process's IPC channel to its parent), else at `gateway.placementUrl` when set, else in-process,
 * counting its placements on `metrics`.
 */
export function gatewayRouter(config: Config, engines: readonly InstanceConfig[], metrics?: RouterMetrics, placement?: PlacementTransport): CallRouter {
  const url = config.gateway.placementUrl;
  const transport = placement ?? (url ? httpTransport(url, gatewayAdminToken(config)) : undefined);
  return transport ? new RemoteRouter({ transport, engines, routing: config.routing }) : createRouter(engines, config.routing, metrics);
}

/** A gateway replica's identity and timings from `gateway.*`. */
export function gatewayReplica(config: Config): ReplicaOptions {
  const g = config.gateway;
  return {
    id: g.replicaId ?? `${os.hostname()}:${g.port}`,
    advertiseUrl: g.advertiseUrl ?? undefined,
    sessionOwnershipTtlMs: g.sessionOwnershipTtlMs,
    policyPollMs: g.policyPollMs,
  };
}

/**
 * The gateway replicas a client of this configuration calls: `gateway.urls`, else the gateways
 * this process started (`started`), else `gateway.url`; none when neither is known.
 */
export function gatewayUrls(config: Config, started?: readonly string[]): string[] {
  if (config.gateway.urls.length > 0) return config.gateway.urls;
  if (started) return [...started];
  return config.gateway.url ? [config.gateway.url] : [];
}
