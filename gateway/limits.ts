import type { FastifyInstance } from 'fastify';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { z } from 'zod';

/**
 * Request limits shared by the gateway and the batch API. Bodies are bounded by a configurable size
 * (`gateway.maxBodyBytes`, `api.maxBodyBytes`); everything inside a body by these constants, so that
 * no request reaches a recursive step (zod, the chat template, `JSON.stringify`) deep or wide enough
 * to exhaust the stack or the event loop.
 */
export const REQUEST_LIMITS = {
  /** Deepest nesting of objects and arrays in a JSON body or JSON-in-a-string (tool-call arguments). Default 64. */
  maxJsonDepth: 64,
  /** Messages or input items of one request. Default 10000 (a long agent transcript has a few thousand). */
  maxMessages: 10_000,
  /** Tools of one request. Default 1000 (MCP-heavy clients send hundreds). */
  maxTools: 1_000,
  /** Content parts (blocks) of one message, and tool calls of one assistant message. Default 10000. */
  maxParts: 10_000,
  /** Characters of one text field (content, arguments, tool output). Default 16 Mi: bounded by the body anyway. */
  maxTextChars: 16 * 1024 * 1024,
  /** Characters of a name, id, model, role or type field. Default 1024. */
  maxNameChars: 1024,
} as const;

/** Default `gateway.maxBodyBytes`: agents send whole transcripts with every call. */
export const GATEWAY_MAX_BODY_BYTES = 16 * 1024 * 1024;

/**
 * Default `api.maxBodyBytes`: the largest bodies are log-prob reports, about 20 bytes a token, so
 * some three million tokens a report; a trainer with more sends several.
 */
export const API_MAX_BODY_BYTES = 64 * 1024 * 1024;

/** A JSON text nested deeper than allowed; answered 400 before it is parsed. */
export class JsonTooDeepError extends Error {
  override name = 'JsonTooDeepError';
  readonly statusCode = 400;
  constructor(
    readonly where: string,
    readonly maxDepth: number,
  ) {
    super(`${where} is nested deeper than ${maxDepth} levels`);
  }
}

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Whether a JSON text nests objects and arrays deeper than `maxDepth`: one iterative pass over the
 * characters, brackets inside strings not counted. It does not validate (JSON.parse does that next),
 * so truncated or malformed text only ever costs one linear scan.
 */
export function exceedsJsonDepth(text: string, maxDepth: number = REQUEST_LIMITS.maxJsonDepth): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      // Strings are most of a conversation's bytes: jump to the next quote not escaped.
      const end = closingQuote(text, i);
      if (end < 0) return false;
      i = end;
      inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > maxDepth) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
  }
  return false;
}

/** The index of the quote that closes a string whose text starts at `from`, or -1. */
function closingQuote(text: string, from: number): number {
  for (let quote = text.indexOf('"', from); quote >= 0; quote = text.indexOf('"', quote + 1)) {
    let backslashes = 0;
    while (quote - backslashes - 1 >= from && text.charCodeAt(quote - backslashes - 1) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote;
  }
  return -1;
}

/** A string field that holds JSON (tool-call arguments): length- and depth-bounded before anyone parses it. */
export const JsonText = z
  .string()
  .max(REQUEST_LIMITS.maxTextChars)
  .refine((text) => !exceedsJsonDepth(text), `JSON nested deeper than ${REQUEST_LIMITS.maxJsonDepth} levels`);

/** A text field: content, reasoning, tool output. */
export const Text = z.string().max(REQUEST_LIMITS.maxTextChars);
/** A name, id, role or type. */
export const Name = z.string().max(REQUEST_LIMITS.maxNameChars);

/**
 * Replaces the app's JSON body parser with one that refuses too-deep bodies before `JSON.parse`,
 * then parses as Fastify's default does (`__proto__` and `constructor.prototype` keys rejected).
 * Register it on the root instance before any route: encapsulated plugins inherit it, so the error
 * goes through each route's own error handler and envelope.
 */
export function installJsonParser(app: FastifyInstance, maxDepth: number = REQUEST_LIMITS.maxJsonDepth): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (exceedsJsonDepth(text, maxDepth)) return done(new JsonTooDeepError('the request body', maxDepth), undefined);
    parse(request, text, done);
  });
}

/**
 * Fastify's `clientErrorHandler` for requests Node cannot parse as HTTP (headers over 16 KiB,
 * malformed request lines, bad chunked encoding): the answer Fastify's default gives (408, 431 or
 * 400, then the connection closes), in the server's own error envelope. Which route was meant is
 * not known yet, so the gateway answers in OpenAI's envelope on every path.
 */
export function clientErrorHandler(envelope: (status: number, message: string) => object): (error: Error & { code?: string }, socket: Duplex) => void {
  return (error, socket) => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const status = error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : error.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
    const body = JSON.stringify(envelope(status, `${STATUS_CODES[status]} (${error.code ?? 'client error'})`));
    if (socket.writable) {
      socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${body}`);
    }
    socket.destroy(error);
  };
}
