import type { Client } from '@temporalio/client';
import Fastify, { type FastifyInstance } from 'fastify';
import { GatewayAdminClient } from '../activities/gateway-admin.js';
import { registerMetricsRoute } from '../telemetry/exposition.js';
import { createMetrics, type RolloutMetrics } from '../telemetry/metrics.js';
import { clientErrorHandler, installJsonParser } from '../gateway/limits.js';
import type { Config } from '../stack/config.js';
import type { TextTokenizer } from '../gateway/codec/index.js';
import { loadConfiguredCodec } from '../stack/roles/codec.js';
import type { ArtifactStore } from '../trajectory/index.js';
import { BatchService } from './batch-service.js';
import { ApiError } from './errors.js';
import { openApiDocument } from './openapi.js';
import { registerRoute } from './route.js';
import { apiRoutes } from './routes.js';
import { sameToken } from './token.js';
import { isViewerOpen, isViewerPath, viewerDenied } from './viewer/auth.js';
import { registerViewer, type ViewerStore } from './viewer/routes.js';

export interface ApiDeps {
  config: Config;
  client: Client;
  /** Acknowledgements and log-prob reports; the viewer reads episodes and turns. */
  store: ViewerStore;
  /** Where the group files are. */
  artifacts: ArtifactStore;
  /** The gateway replicas' base URLs and their admin token (policy calls go to any of them). */
  gateway: { urls: readonly string[]; adminToken: string };
  /** Bearer token every request but those of `OPEN_PATHS` must carry (`Authorization: Bearer …`). */
  token: string;
  /** What `GET /metrics` serves (the process's metrics). Default: metrics of its own (Node's process metrics; the rest stay at zero in an API-only process). */
  metrics?: RolloutMetrics;
  /** The model's tokenizer, for the viewer's token text. Default: loaded from `model.*` on first use. */
  tokenizer?: () => Promise<TextTokenizer>;
}

/** Routes anyone may read: the API's description and its liveness. */
const OPEN_PATHS = new Set(['/openapi.json', '/health']);

/**
 * The trainer-facing HTTP API: batches (start, status, long-poll for finished groups, Arrow data,
 * ack, cancel, log-prob consistency) and the policy routes forwarded to the gateway. Every input is
 * validated with zod; every error answers `{"error": {"type", "message"}}`; GET /openapi.json is
 * generated from the same schemas.
 */
export function buildApiServer(deps: ApiDeps): FastifyInstance {
  const app = Fastify({
    logger: false,
    bodyLimit: deps.config.api.maxBodyBytes,
    clientErrorHandler: clientErrorHandler((_status, message) => ({ error: { type: 'invalid_request', message } })),
  });
  installJsonParser(app);
  const token = deps.token;
  app.addHook('onRequest', async (request, reply) => {
    const path = request.url.split('?')[0]!;
    if (OPEN_PATHS.has(path) || isViewerOpen(path)) return;
    const given = /^Bearer (.+)$/i.exec(request.headers.authorization ?? '')?.[1];
    if (given === undefined || !sameToken(given, token)) {
      // The viewer also takes its login cookie (browsers send no bearer header on navigation).
      if (isViewerPath(path)) return viewerDenied(request, reply, token);
      return reply.code(401).send({ error: { type: 'unauthorized', message: 'missing or wrong bearer token (api.token)' } });
    }
  });
  const batches = new BatchService(deps.client, deps.config, deps.artifacts);
  const routes = apiRoutes({
    config: deps.config,
    batches,
    store: deps.store,
    artifacts: deps.artifacts,
    gateway: new GatewayAdminClient(deps.gateway),
  });
  for (const route of routes) registerRoute(app, route);
  let codec: Promise<TextTokenizer> | undefined;
  registerViewer(app, {
    client: deps.client,
    batches,
    store: deps.store,
    token,
    tokenizer: deps.tokenizer ?? (() => (codec ??= loadConfiguredCodec(deps.config).then((c) => c.tokenizer))),
  });
  const document = openApiDocument(routes, { title: 'agent-rollout batch API', version: '1' });
  app.get('/openapi.json', async () => document);
  registerMetricsRoute(app, (deps.metrics ?? createMetrics()).registry, token);

  app.setErrorHandler((error, _request, reply) => {
    if (error instanceof ApiError) return reply.code(error.status).send(error.envelope());
    const status = (error as { statusCode?: number }).statusCode;
    // Fastify's own client errors (malformed JSON, wrong content type, body too large).
    if (status && status >= 400 && status < 500) return reply.code(status).send({ error: { type: 'invalid_request', message: (error as Error).message } });
    return reply.code(500).send({ error: { type: 'internal_error', message: (error as Error).message } });
  });
  app.setNotFoundHandler((request, reply) => reply.code(404).send({ error: { type: 'not_found', message: `no route ${request.method} ${request.url}` } }));
  return app;
}
