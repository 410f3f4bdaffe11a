import type { FastifyReply } from 'fastify';
import { BackendError } from '../backends/backend.js';
import { GatewayError } from '../session/errors.js';

/** What OpenAI's error envelope says of a failure: its status, `type` and message. */
export interface OpenAiError {
  status: number;
  type: string;
  message: string;
}

/**
 * A failure as OpenAI clients read it. A gateway error names its own type; anything else is typed
 * by its status, so an engine's 4xx (the request's fault) is an `invalid_request_error`, not a
 * `server_error` that clients retry. `fallbackStatus` is for errors that carry no status.
 */
export function openAiError(error: unknown, fallbackStatus: number): OpenAiError {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof GatewayError) return { status: error.status, type: error.type, message };
  const status = error instanceof BackendError ? error.status : ((error as { statusCode?: number }).statusCode ?? fallbackStatus);
  return { status, type: status < 500 ? 'invalid_request_error' : 'server_error', message };
}

/** Answers with OpenAI's envelope `{"error":{"message","type","param","code"}}`. */
export function sendOpenAiError(
  reply: FastifyReply,
  error: unknown,
  detail: { param: string | null; code: string | null } = { param: null, code: null },
): FastifyReply {
  const { status, type, message } = openAiError(error, 500);
  return reply.code(status).send({ error: { message, type, ...detail } });
}
