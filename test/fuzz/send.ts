import net from 'node:net';
import type { FuzzRequest } from './requests.js';

/** What a request got: an HTTP status, or no answer (`status` 0) and why. */
export interface FuzzOutcome {
  status: number;
  /** The first bytes of the answer, to show with a failure. */
  answer: string;
  error?: string;
}

const ANSWER_PREVIEW = 300;

/** Sends one request with fetch, reading the whole answer (a stream included) before it returns. */
async function sendFetch(base: string, request: FuzzRequest, timeoutMs: number): Promise<FuzzOutcome> {
  try {
    const response = await fetch(`${base}${request.path}`, {
      method: request.method,
      headers: request.headers,
      body: request.body && Uint8Array.from(request.body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    return { status: response.status, answer: text.slice(0, ANSWER_PREVIEW) };
  } catch (error) {
    return { status: 0, answer: '', error: String((error as Error).cause ?? error) };
  }
}

/** Writes raw bytes to a connection and reads the status line of whatever comes back. */
function sendRaw(base: string, raw: Buffer, timeoutMs: number): Promise<FuzzOutcome> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = net.connect({ host: hostname, port: Number(port) });
    const done = (error?: string) => {
      socket.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0);
      resolve({ status, answer: text.slice(0, ANSWER_PREVIEW), ...(error && status === 0 ? { error } : {}) });
    };
    socket.setTimeout(timeoutMs, () => done('timeout'));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', (error) => done(String(error)));
    socket.on('close', () => done());
    socket.end(raw);
  });
}

export function send(bases: { gateway: string; api: string }, request: FuzzRequest, timeoutMs: number): Promise<FuzzOutcome> {
  const base = bases[request.target];
  return request.raw ? sendRaw(base, request.raw, timeoutMs) : sendFetch(base, request, timeoutMs);
}

/** A request as it can be read in a failure report: the body cut to its first bytes. */
export function describeRequest(request: FuzzRequest): string {
  const bytes = request.raw ?? request.body;
  const preview = bytes ? `${bytes.subarray(0, 500).toString('latin1')}${bytes.length > 500 ? ` … (${bytes.length} bytes)` : ''}` : '(no body)';
  return `${request.method} ${request.target}${request.path} ${JSON.stringify(request.headers)}\n${preview}`;
}
