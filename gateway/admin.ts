import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { z } from 'zod';
import { Name } from './limits.js';
import { MAX_POLICY_VERSION, PolicyVersionError, type PolicyControl } from './policy/policy-control.js';
import { LOCAL_SCOPE, type PolicyFanOut } from './policy/fan-out.js';
import type { ProcessStats } from './process-stats.js';
import { SamplingSchema } from './sampling-schema.js';
import { GatewayError } from './session/errors.js';
import type { SessionManager } from './session/session-manager.js';
import type { CallRouter } from '../scheduler/router.js';

const OpenSessionBody = z.object({
  sessionId: Name.min(1),
  episodeId: Name.min(1),
  attempt: z.number().int().nonnegative(),
  info: z.object({
    batchId: Name,
    taskId: Name,
    groupId: Name,
    episodeIndex: z.number().int().nonnegative(),
    agentName: Name,
    homeInstance: Name,
    budgets: z.object({
      maxTurns: z.number().int().positive(),
      maxContextTokens: z.number().int().positive(),
      maxWallTimeMs: z.number().int().positive(),
    }),
    // Keys an older worker does not send take their defaults.
    sampling: SamplingSchema,
  }),
});
export type OpenSessionBody = z.infer<typeof OpenSessionBody>;

const CloseSessionBody = z.object({ reason: Name.min(1) });
const PauseBody = z.object({ mode: z.enum(['finish', 'abort']) });
const ResumeBody = z.object({ version: z.number().int().nonnegative().max(MAX_POLICY_VERSION) });
/** `?reset=1` starts a new event-loop delay window; `?gc=1` collects garbage first (with `--expose-gc`). */
const StatsQuery = z.object({ reset: z.enum(['0', '1']).optional(), gc: z.enum(['0', '1']).optional() });
/** `?scope=local`: act on this replica only (another replica's fan-out); default: on every replica. */
const PolicyQuery = z.object({ scope: z.literal(LOCAL_SCOPE).optional() });

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Control routes behind an admin token that agents never see: the episode's activities open and
 * close sessions; the trainer (through the batch API) pauses generation around a weight update and
 * resumes it on the new policy version; benchmarks read the process's stats.
 */
export function registerAdminRoutes(
  app: FastifyInstance,
  deps: {
    sessions: SessionManager;
    policy: PolicyControl;
    fanOut: PolicyFanOut;
    router: CallRouter;
    adminToken: string;
    instances: () => string[];
    /** Sends a close for a session another replica owns to that replica (replica/affinity.ts). */
    closeAffinity: (request: FastifyRequest, reply: FastifyReply, payload: Readable) => Promise<Readable | undefined>;
    /** This process's event-loop delay, memory and request timings. */
    stats: ProcessStats;
  },
): void {
  const { stats } = deps;
  app.register(async (admin) => {
    admin.addHook('onRequest', async (request, reply) => {
      const auth = request.headers.authorization ?? '';
      if (!sameSecret(auth, `Bearer ${deps.adminToken}`)) {
        return reply.code(401).send({ error: { message: 'admin token required', type: 'authentication_error' } });
      }
    });
    admin.post('/admin/v1/sessions', async (request, reply) => {
      const body = OpenSessionBody.safeParse(request.body);
      if (!body.success) return reply.code(400).send({ error: { message: z.prettifyError(body.error), type: 'invalid_request_error' } });
      if (!deps.instances().includes(body.data.info.homeInstance)) {
        return reply.code(400).send({ error: { message: `unknown engine instance ${body.data.info.homeInstance}`, type: 'invalid_request_error' } });
      }
      return deps.sessions.open(body.data);
    });
    admin.post('/admin/v1/sessions/:id/close', { preParsing: deps.closeAffinity }, async (request, reply) => {
      const body = CloseSessionBody.safeParse(request.body);
      if (!body.success) return reply.code(400).send({ error: { message: z.prettifyError(body.error), type: 'invalid_request_error' } });
      let summary;
      try {
        summary = await deps.sessions.close((request.params as { id: string }).id, body.data.reason);
      } catch (error) {
        if (error instanceof GatewayError) return reply.code(error.status).send({ error: { message: error.message, type: error.type } });
        throw error;
      }
      if (!summary) return reply.code(404).send({ error: { message: 'no such session', type: 'not_found_error' } });
      deps.router.forgetSession(summary.sessionId);
      return summary;
    });
    admin.get('/admin/v1/stats', async (request, reply) => {
      const query = StatsQuery.safeParse(request.query);
      if (!query.success) return reply.code(400).send({ error: { message: z.prettifyError(query.error), type: 'invalid_request_error' } });
      // Only a process started with --expose-gc has it; memory is then measured after a collection.
      const gc = query.data.gc === '1' ? (globalThis as { gc?: () => void }).gc : undefined;
      gc?.();
      const snapshot = { ...stats.snapshot(), liveSessions: deps.sessions.liveCount, collected: gc !== undefined };
      if (query.data.reset === '1') stats.reset();
      return snapshot;
    });
    admin.get('/admin/v1/policy', async () => deps.policy.current());
    admin.post('/admin/v1/policy/pause', async (request, reply) => {
      const body = PauseBody.safeParse(request.body);
      if (!body.success) return reply.code(400).send({ error: { message: z.prettifyError(body.error), type: 'invalid_request_error' } });
      const query = PolicyQuery.safeParse(request.query);
      if (!query.success) return reply.code(400).send({ error: { message: z.prettifyError(query.error), type: 'invalid_request_error' } });
      return query.data.scope === LOCAL_SCOPE ? deps.policy.settle(body.data.mode) : deps.fanOut.pause(body.data.mode);
    });
    admin.post('/admin/v1/policy/resume', async (request, reply) => {
      const body = ResumeBody.safeParse(request.body);
      if (!body.success) return reply.code(400).send({ error: { message: z.prettifyError(body.error), type: 'invalid_request_error' } });
      const query = PolicyQuery.safeParse(request.query);
      if (!query.success) return reply.code(400).send({ error: { message: z.prettifyError(query.error), type: 'invalid_request_error' } });
      // A replica told by another follows the store, which already holds the resume.
      if (query.data.scope === LOCAL_SCOPE) return deps.policy.sync();
      try {
        return await deps.fanOut.resume(body.data.version);
      } catch (error) {
        if (error instanceof PolicyVersionError) return reply.code(400).send({ error: { message: error.message, type: 'invalid_request_error' } });
        throw error;
      }
    });
  });
}
