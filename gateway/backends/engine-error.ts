import { z } from 'zod';

/**
 * An error event inside an engine's 200 stream, found once the stream has begun: vLLM's
 * `{"error": {message, type, param, code}}` (older versions `{"object": "error", message, …}`),
 * SGLang's `{"error": {"message"}}` (no code: a ValueError, the request's fault).
 */
const ErrorFieldsSchema = z.object({ message: z.string(), code: z.union([z.number(), z.string()]).nullish() });
const ErrorEventSchema = z.union([z.object({ error: ErrorFieldsSchema }), ErrorFieldsSchema.extend({ object: z.literal('error') })]);

export interface EngineErrorEvent {
  message: string;
  /** The HTTP status the engine names in `code`; undefined when it names none. */
  status: number | undefined;
}

/**
 * The error `event` (a parsed stream chunk) carries, or undefined for any other chunk; checked
 * without a schema first, as every token's chunk passes here.
 */
export function engineErrorEvent(event: unknown): EngineErrorEvent | undefined {
  if (typeof event !== 'object' || event === null || !('error' in event || (event as { object?: unknown }).object === 'error')) return undefined;
  const parsed = ErrorEventSchema.safeParse(event);
  if (!parsed.success) return undefined;
  const fields = 'error' in parsed.data ? parsed.data.error : parsed.data;
  const code = Number(fields.code);
  return { message: fields.message, status: Number.isInteger(code) && code >= 400 && code < 600 ? code : undefined };
}
