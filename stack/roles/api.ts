import { Client, Connection } from '@temporalio/client';
import { buildApiServer } from '../../api/index.js';
import { ConfigError, type Config } from '../config.js';
import type { Store } from '../../trajectory/index.js';
import type { RolloutMetrics } from '../../telemetry/metrics.js';
import { openConfiguredArtifacts } from '../artifacts.js';
import { apiToken, gatewayAdminToken } from '../secrets.js';
import { withStops } from '../stops.js';
import { openConfiguredStore } from '../store.js';
import { temporalConnectionOptions } from '../temporal-connection.js';
import { listenUrl } from './listen.js';
import { gatewayUrls } from './placement.js';

export interface ApiRole {
  url: string;
  stop(): Promise<void>;
}

/**
 * The batch API on `api.host:port`, forwarding policy routes to the gateways `gatewayUrls` (the
 * ones this process runs; default `gateway.urls`, else `gateway.url`). Without `shared.client` it connects to `temporal.address` itself;
 * without `shared.store` it opens `store.url`. Group files are read from `artifacts.uri`. `GET /metrics`
 * (with `api.token`) serves `shared.metrics`, the process's, else its own default process metrics.
 */
export function startApi(config: Config, shared: { client?: Client; gatewayUrls?: readonly string[]; store?: Store; metrics?: RolloutMetrics } = {}): Promise<ApiRole> {
  const urls = gatewayUrls(config, shared.gatewayUrls);
  if (urls.length === 0) throw new ConfigError('the batch API needs gateway.url or gateway.urls (the gateway it forwards policy routes to)');
  const gateway = { urls, adminToken: gatewayAdminToken(config) };
  const token = apiToken(config);
  return withStops(async (stops) => {
    let client = shared.client;
    if (!client) {
      const connection = await Connection.connect(temporalConnectionOptions(config));
      stops.push(() => connection.close());
      client = new Client({ connection, namespace: config.temporal.namespace });
    }
    let store = shared.store;
    if (!store) {
      const own = await openConfiguredStore(config);
      stops.push(() => own.close());
      store = own;
    }
    const artifacts = openConfiguredArtifacts(config);
    stops.push(() => artifacts.close());
    const api = buildApiServer({ config, client, store, artifacts, gateway, token, metrics: shared.metrics });
    stops.push(() => api.close());
    return { url: await listenUrl(api, config.api.host, config.api.port) };
  });
}
