import type { FastifyInstance, FastifyRequest } from 'fastify';

/**
 * Where one model request's time went, filled in while it runs: the engine's share (from sending a
 * generation to its last chunk, over every attempt) and the wait for a placement (KV admission,
 * held calls). The rest of the request's wall time is what the gateway itself added.
 */
export interface TurnTiming {
  engineMs: number;
  waitMs: number;
  /** Generations sent; a request answered without one (a repeat, a budget answer, an error) is not timed. */
  generations: number;
}

/** One timed request, when its response has ended. */
export interface TurnTimes {
  /** Wall time from the request's arrival to its response's end, less `engineMs` and `waitMs`. */
  addedMs: number;
  engineMs: number;
  waitMs: number;
}

const timings = new WeakMap<FastifyRequest['raw'], TurnTiming>();

/** The timing of a request `timeTurns` watches; undefined for any other. */
export function turnTimingOf(request: FastifyRequest): TurnTiming | undefined {
  return timings.get(request.raw);
}

/**
 * Times every POST of the routes `app` holds, from its arrival (before the body is read) to the end
 * of its response (streamed or not); `record` gets each request that generated.
 */
export function timeTurns(app: FastifyInstance, record: (times: TurnTimes) => void): void {
  app.addHook('onRequest', async (request, reply) => {
    if (request.method !== 'POST') return;
    const started = performance.now();
    const timing: TurnTiming = { engineMs: 0, waitMs: 0, generations: 0 };
    timings.set(request.raw, timing);
    reply.raw.once('finish', () => {
      if (timing.generations === 0) return;
      record({ addedMs: performance.now() - started - timing.engineMs - timing.waitMs, engineMs: timing.engineMs, waitMs: timing.waitMs });
    });
  });
}
