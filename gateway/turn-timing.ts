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
  /** When its body had been read and parsed (`performance.now()`). */
  bodyReadAt?: number;
  /** When its first generation was sent, and `waitMs` then. */
  firstSent?: { at: number; waitMs: number };
  /** When its last generation's answer ended. */
  lastAnsweredAt?: number;
}

/**
 * Where the gateway's own time of a request went: reading and parsing its body, from then to its
 * first generation (template, encode, placement less its wait), and from the engine's last chunk to
 * the response's end (parse, commit, answer). Retries between generations are in none of them.
 */
export interface AddedPhases {
  bodyMs: number;
  beforeEngineMs: number;
  afterEngineMs: number;
}

/** One timed request, when its response has ended. */
export interface TurnTimes {
  /** Wall time from the request's arrival to its response's end, less `engineMs` and `waitMs`. */
  addedMs: number;
  engineMs: number;
  waitMs: number;
  phases: AddedPhases;
}

/** Marks the first generation of a timed request as sent now (`now`, after `timing.waitMs` of waiting). */
export function markSent(timing: TurnTiming, now: number): void {
  timing.firstSent ??= { at: now, waitMs: timing.waitMs };
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
      const ended = performance.now();
      const bodyReadAt = timing.bodyReadAt ?? started;
      const firstSent = timing.firstSent ?? { at: bodyReadAt, waitMs: 0 };
      record({
        addedMs: ended - started - timing.engineMs - timing.waitMs,
        engineMs: timing.engineMs,
        waitMs: timing.waitMs,
        phases: {
          bodyMs: bodyReadAt - started,
          beforeEngineMs: firstSent.at - bodyReadAt - firstSent.waitMs,
          afterEngineMs: ended - (timing.lastAnsweredAt ?? ended),
        },
      });
    });
  });
  app.addHook('preHandler', async (request) => {
    const timing = timings.get(request.raw);
    if (timing) timing.bodyReadAt = performance.now();
  });
}
