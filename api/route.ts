import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import { InvalidRequestError } from './errors.js';

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

/** A non-JSON success answer, for the OpenAPI document. */
export interface RawAnswer {
  contentType: string;
  description: string;
}

/**
 * One route: its schemas (validated before the handler runs, and documented in the OpenAPI
 * document) and its handler. The handler's return value is the JSON answer.
 */
export interface RouteSpec<P extends z.ZodType | undefined = z.ZodType | undefined, Q extends z.ZodType | undefined = z.ZodType | undefined, B extends z.ZodType | undefined = z.ZodType | undefined> {
  method: 'GET' | 'POST';
  /** Fastify path, e.g. `/v1/batches/:id`. */
  url: string;
  summary: string;
  description?: string;
  params?: P;
  query?: Q;
  body?: B;
  /** Status of a success. Default 200. */
  status?: number;
  answer: z.ZodType | RawAnswer;
  handler(input: { params: Out<P>; query: Out<Q>; body: Out<B> }, reply: FastifyReply): Promise<unknown>;
}

/** Keeps the schema types of a route for its handler. */
export function defineRoute<P extends z.ZodType | undefined = undefined, Q extends z.ZodType | undefined = undefined, B extends z.ZodType | undefined = undefined>(spec: RouteSpec<P, Q, B>): RouteSpec<P, Q, B> {
  return spec;
}

function parse(schema: z.ZodType | undefined, value: unknown, where: string): unknown {
  if (!schema) return undefined;
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new InvalidRequestError(`invalid ${where}:\n${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

export function registerRoute(app: FastifyInstance, spec: RouteSpec): void {
  app.route({
    method: spec.method,
    url: spec.url,
    handler: async (request, reply) => {
      const input = {
        params: parse(spec.params, request.params, 'path parameters'),
        query: parse(spec.query, request.query, 'query parameters'),
        // No body at all is an empty object; a JSON `null` (or any non-object) is refused, so it
        // never becomes a request made of defaults.
        body: parse(spec.body, request.body === undefined ? {} : request.body, 'request body'),
      };
      const answer = await spec.handler(input as Parameters<RouteSpec['handler']>[0], reply);
      reply.code(spec.status ?? 200);
      return answer;
    },
  });
}
