/**
 * Riding out a gateway restart: a client call that finds no gateway (connection refused or reset,
 * or a 502/503/504 from a replica that is starting, stopping or handing a session over) is tried
 * again with backoff instead of failing at once, until the gateway has been gone for longer than
 * the caller's bound. Only the caller knows whether a repeat is safe: the built-in agent's model
 * call is (it names its turn, see agents/builtin/step.ts), opening and closing a session are
 * (idempotent by session id).
 */
import { isConnectionFailure } from './rendezvous.js';

/** What `limits.gatewayOutageMs` defaults to: how long a gateway may be gone before a call gives up, ms. */
export const GATEWAY_OUTAGE_DEFAULT_MS = 90_000;

/** HTTP statuses of a gateway that is not serving yet (or no longer): the call is repeated. */
const OUTAGE_STATUSES = new Set([502, 503, 504]);

/** The gateway stayed unreachable for longer than the bound; the caller's work is lost. */
export class GatewayOutageError extends Error {
  override name = 'GatewayOutageError';
}

export interface OutageOptions {
  /** How long the gateway may stay unreachable before the call fails, ms. Default 90000. */
  outageMs?: number;
  /** Ends the waiting (the activity was cancelled): the abort reason is thrown. */
  signal?: AbortSignal;
  /** First delay between tries, ms; it doubles up to `maxDelayMs`. Default 250. */
  initialDelayMs?: number;
  /** Longest delay between tries, ms. Default 5000. */
  maxDelayMs?: number;
}

/** A response read whole: `call` must consume the body, so a connection lost mid-answer is retried too. */
export interface ReadResponse {
  status: number;
  ok: boolean;
  text: string;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Runs `call` until it reaches a serving gateway: repeated after a connection failure or an outage
 * status, with delays doubling from `initialDelayMs` to `maxDelayMs`, for at most `outageMs` after
 * the first failure; then throws GatewayOutageError. Any other answer, error status included, is
 * returned as it is.
 */
export async function throughOutage(call: () => Promise<ReadResponse>, options: OutageOptions = {}): Promise<ReadResponse> {
  const outageMs = options.outageMs ?? GATEWAY_OUTAGE_DEFAULT_MS;
  let delay = options.initialDelayMs ?? 250;
  const maxDelay = options.maxDelayMs ?? 5_000;
  let since: number | undefined;
  for (;;) {
    let last: string;
    try {
      const response = await call();
      if (!OUTAGE_STATUSES.has(response.status)) return response;
      last = `answered ${response.status}: ${response.text.slice(0, 200)}`;
    } catch (error) {
      if (!isConnectionFailure(error) || options.signal?.aborted) throw error;
      last = String((error as Error).cause ?? error);
    }
    since ??= Date.now();
    const left = since + outageMs - Date.now();
    if (left <= 0) throw new GatewayOutageError(`gateway unreachable for ${outageMs} ms (last: ${last})`);
    await sleep(Math.min(delay, left), options.signal);
    delay = Math.min(delay * 2, maxDelay);
  }
}

/** `fetch` whose answer is read whole (see ReadResponse). */
export async function readWhole(response: Promise<Response>): Promise<ReadResponse> {
  const r = await response;
  return { status: r.status, ok: r.ok, text: await r.text() };
}
