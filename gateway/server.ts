import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { createRouter, type Router } from '../scheduler/router.js';
import type { Store } from '../trajectory/index.js';
import { registerAdminRoutes } from './admin.js';
import { BackendError, type Backend } from './backends/backend.js';
import { createBackend } from './backends/index.js';
import type { Codec } from './codec/index.js';
import type { GatewayDeps } from './deps.js';
import { PolicyControl } from './policy/policy-control.js';
import { registerAnthropicMessages } from './protocols/anthropic-messages.js';
import { registerChatCompletions } from './protocols/openai-chat.js';
import { registerResponses } from './protocols/openai-responses.js';
import { GatewayError } from './session/errors.js';
import { SessionManager } from './session/session-manager.js';

/** An inference engine the gateway can send a session to. */
export interface EngineInstance {
  name: string;
  kind: 'vllm' | 'sglang';
  url: string;
  /** KV cache capacity in tokens, for routing. Default unbounded: memory never moves work off it. */
  kvCapacityTokens?: number;
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
   * instance while healthy) and default health checks.
   */
  router?: Router;
}

/**
 * Protocol routes, mounted at the root and under `/s/<key>` for clients that cannot set a key.
 * Each protocol is its own encapsulated plugin with its own error envelope.
 */
function protocolRoutes(deps: GatewayDeps) {
  return async (app: FastifyInstance) => {
    await app.register(async (openai) => {
      openai.setErrorHandler(openAiErrorHandler);
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

/** OpenAI's envelope `{"error":{"message","type","param","code"}}` for every failure. */
function openAiErrorHandler(error: unknown, _request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (error instanceof GatewayError || error instanceof BackendError) {
    const type = error instanceof GatewayError ? error.type : 'server_error';
    return reply.code(error.status).send({ error: { message: error.message, type, param: null, code: null } });
  }
  const status = (error as { statusCode?: number }).statusCode ?? 500;
  const type = status < 500 ? 'invalid_request_error' : 'server_error';
  return reply.code(status).send({ error: { message: (error as Error).message, type, param: null, code: null } });
}

export async function buildGateway(options: GatewayOptions): Promise<FastifyInstance> {
  const backends = new Map<string, Backend>(
    options.engines.map((e) => [e.name, createBackend(e, options.modelName)]),
  );
  const router = options.router ?? createRouter(options.engines, { policy: 'home' });
  const unknown = router.registry.names.filter((name) => !backends.has(name));
  if (unknown.length > 0) throw new Error(`the router places on engine instances not configured: ${unknown.join(', ')}`);
  const sessions = new SessionManager(options.store, options.codec);
  const policy = await PolicyControl.create(options.store);
  const deps: GatewayDeps = {
    sessions,
    modelName: options.modelName,
    turns: {
      codec: options.codec,
      store: options.store,
      policy,
      router,
      backendFor(instance) {
        const backend = backends.get(instance);
        if (!backend) throw new GatewayError(`engine instance ${instance} is not configured`, 503, 'server_error');
        return backend;
      },
    },
  };
  const app = Fastify({ logger: options.logger ?? false, bodyLimit: 64 * 1024 * 1024 });
  app.addHook('onClose', () => router.close());
  app.setErrorHandler(openAiErrorHandler);
  app.head('/', async (_request, reply) => reply.code(200).send());
  app.get('/health', async () => ({ status: 'ok', sessions: 'ready' }));
  await app.register(protocolRoutes(deps));
  await app.register(protocolRoutes(deps), { prefix: '/s/:key' });
  registerAdminRoutes(app, { sessions, policy, router, adminToken: options.adminToken, instances: () => [...backends.keys()] });
  router.start();
  return app;
}
