import Fastify, { type FastifyInstance } from 'fastify';
import os from 'node:os';
import { createRouter, type CallRouter } from '../scheduler/router.js';
import type { Store } from '../trajectory/index.js';
import { registerAdminRoutes } from './admin.js';
import { clientErrorHandler, GATEWAY_MAX_BODY_BYTES, installJsonParser } from './limits.js';
import { sessionKeyOf } from './auth.js';
import type { Backend } from './backends/backend.js';
import { createBackend } from './backends/index.js';
import type { Codec } from './codec/index.js';
import { inlineDriftChecker, type DriftChecker } from './session/drift-checker.js';
import type { GatewayDeps } from './deps.js';
import { PolicyFanOut } from './policy/fan-out.js';
import { PolicyControl } from './policy/policy-control.js';
import { registerAnthropicMessages } from './protocols/anthropic-messages.js';
import { registerChatCompletions } from './protocols/openai-chat.js';
import { sendOpenAiError } from './protocols/openai-error.js';
import { registerResponses } from './protocols/openai-responses.js';
import { sessionAffinity } from './replica/affinity.js';
import { REPLICA_DEFAULTS, type ReplicaOptions } from './replica/options.js';
import { ReplicaRegistration } from './replica/registration.js';
import { GatewayError } from './session/errors.js';
import { SessionOwnership } from './session/ownership.js';
import { SessionManager } from './session/session-manager.js';
import { ProcessStats } from './process-stats.js';
import { timeTurns } from './turn-timing.js';
import { registerMetricsRoute } from '../telemetry/exposition.js';
import { createMetrics, type RolloutMetrics } from '../telemetry/metrics.js';

/** An inference engine the gateway can send a session to. */
export interface EngineInstance {
  name: string;
  kind: 'vllm' | 'sglang';
  url: string;
  /** KV cache capacity in tokens, for routing. Default unbounded: memory never moves work off it. */
  kvCapacityTokens?: number;
  /**
   * The engine's context length (its `max_model_len`): prompt plus max_tokens of one request.
   * Default unknown: only the session's context budget bounds a request.
   */
  maxModelLen?: number;
}

export interface GatewayOptions {
  codec: Codec;
  store: Store;
  engines: EngineInstance[];
  /** Model name the engines serve. */
  modelName: string;
  /** Bearer token for the admin routes. */
  adminToken: string;
  /** Log requests (pino). Default false. */
  logger?: boolean;
  /**
   * Places every generation on an engine (instance names as in `engines`). The gateway starts it
   * and closes it when it closes. Default: a router with the `home` policy (each session's home
   * instance while healthy) and default health checks, counting on `metrics`.
   */
  router?: CallRouter;
  replica?: ReplicaOptions;
  /**
   * Where replica events (takeovers, unreachable replicas, failed renewals) and request options the
   * gateway ignores (once per session) go. Default `console.warn`.
   */
  log?: (line: string) => void;
  /** Largest request body; a larger one answers 413. Default 16 MiB (`GATEWAY_MAX_BODY_BYTES`). */
  maxBodyBytes?: number;
  /**
   * Where turns, tokens and latencies are counted; `GET /metrics` (with `adminToken`) serves its
   * registry. Give the router the same (`createRouter`'s `metrics`) to have placements on it too.
   * Default: metrics on a registry of this gateway's own.
   */
  metrics?: RolloutMetrics;
  /**
   * Where a closing session's drift checks run (a re-render and re-encode of each chain). The
   * gateway closes it when it closes. Default: on the event loop, with `codec` (`inlineDriftChecker`).
   */
  driftChecker?: DriftChecker;
}

/** The URL a listening server is reached at (a wildcard address is named by the host name). */
function listenUrl(app: FastifyInstance): string {
  const address = app.server.address();
  if (!address || typeof address !== 'object') throw new Error('the gateway is not listening on TCP');
  const host = address.address === '0.0.0.0' || address.address === '::' ? os.hostname() : address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

/**
 * Protocol routes, mounted at the root and under `/s/<key>` for clients that cannot set a key.
 * Each protocol is its own encapsulated plugin with its own error envelope.
 */
function protocolRoutes(deps: GatewayDeps, affinity: ReturnType<typeof sessionAffinity>, stats: ProcessStats) {
  const metrics = deps.turns.metrics;
  return async (app: FastifyInstance) => {
    timeTurns(app, (times) => {
      stats.recordTurn(times);
      metrics.timed(times.addedMs, times.engineMs, times.waitMs);
    });
    // Before the body is read: a request for a session owned elsewhere goes there as it came.
    app.addHook('preParsing', affinity);
    await app.register(async (openai) => {
      openai.setErrorHandler((error, _request, reply) => sendOpenAiError(reply, error));
      registerChatCompletions(openai, deps);
      registerResponses(openai, deps);
      openai.get('/v1/models', async () => ({
        object: 'list',
        data: [{ id: deps.modelName, object: 'model', created: 0, owned_by: 'agent-rollout' }],
      }));
    });
    await app.register(async (anthropic) => {
      registerAnthropicMessages(anthropic, deps);
    });
  };
}

export async function buildGateway(options: GatewayOptions): Promise<FastifyInstance> {
  const backends = new Map<string, Backend>(
    options.engines.map((e) => [e.name, createBackend(e, options.modelName)]),
  );
  const metrics = options.metrics ?? createMetrics();
  const router = options.router ?? createRouter(options.engines, { policy: 'home' }, metrics.router);
  const unknown = router.registry.names.filter((name) => !backends.has(name));
  if (unknown.length > 0) throw new Error(`the router places on engine instances not configured: ${unknown.join(', ')}`);
  const log = options.log ?? ((line: string) => console.warn(line));
  const replica = { id: os.hostname(), ...REPLICA_DEFAULTS, ...options.replica };
  const registration = new ReplicaRegistration(options.store, replica.id, replica.sessionOwnershipTtlMs, log);
  const ownership = new SessionOwnership(options.store, replica.id, replica.sessionOwnershipTtlMs, log);
  const driftChecker = options.driftChecker ?? inlineDriftChecker(options.codec);
  const sessions = new SessionManager(options.store, driftChecker, ownership);
  const policy = await PolicyControl.create(options.store);
  const fanOut = new PolicyFanOut({ policy, replicaId: replica.id, replicas: () => registration.live(), adminToken: options.adminToken, log });
  const affinity = { ownership, registration, log };
  const deps: GatewayDeps = {
    sessions,
    modelName: options.modelName,
    log,
    turns: {
      codec: options.codec,
      store: options.store,
      policy,
      router,
      owner: replica.id,
      // Every engine may take any call (failover), so the smallest context length bounds them all.
      maxModelLen: Math.min(...options.engines.map((e) => e.maxModelLen ?? Infinity)),
      dropSession: (session) => sessions.drop(session),
      metrics: metrics.gateway,
      backendFor(instance) {
        const backend = backends.get(instance);
        if (!backend) throw new GatewayError(`engine instance ${instance} is not configured`, 503, 'server_error');
        return backend;
      },
    },
  };
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: options.maxBodyBytes ?? GATEWAY_MAX_BODY_BYTES,
    clientErrorHandler: clientErrorHandler((_status, message) => ({ error: { message, type: 'invalid_request_error', param: null, code: null } })),
  });
  installJsonParser(app);
  app.addHook('onListen', async () => {
    await registration.start(replica.advertiseUrl ?? listenUrl(app));
  });
  app.addHook('onClose', async () => {
    registration.close();
    ownership.close();
    policy.close();
    await router.close();
    await driftChecker.close();
  });
  app.setErrorHandler((error, _request, reply) => sendOpenAiError(reply, error));
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error: { message: `no route ${request.method} ${request.url}`, type: 'invalid_request_error', param: null, code: 'not_found' } }),
  );
  app.head('/', async (_request, reply) => reply.code(200).send());
  app.get('/health', async () => ({ status: 'ok', sessions: 'ready' }));
  registerMetricsRoute(app, metrics.registry, options.adminToken);
  const protocolAffinity = sessionAffinity(affinity, (request) => {
    const key = request.method === 'POST' ? sessionKeyOf(request) : undefined;
    return key === undefined ? undefined : sessions.locateByKey(key);
  });
  const stats = new ProcessStats();
  app.addHook('onClose', async () => stats.close());
  await app.register(protocolRoutes(deps, protocolAffinity, stats));
  await app.register(protocolRoutes(deps, protocolAffinity, stats), { prefix: '/s/:key' });
  registerAdminRoutes(app, {
    sessions,
    policy,
    fanOut,
    router,
    adminToken: options.adminToken,
    instances: () => [...backends.keys()],
    closeAffinity: sessionAffinity(affinity, (request) => sessions.locateById((request.params as { id: string }).id)),
    stats,
  });
  router.start();
  ownership.start();
  policy.startPolling(replica.policyPollMs, log);
  return app;
}
