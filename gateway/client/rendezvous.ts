/**
 * Client-side session affinity across gateway replicas: each session's calls go to the replica
 * with the highest rendezvous (HRW) score for its session id, so every client of one session —
 * the activities opening and closing it, the built-in agent, a black-box agent's bridge — picks
 * the same replica without coordinating, and only a replica's own sessions move when the list
 * changes. A replica that refuses or drops the connection is skipped for the next in order; the
 * gateways forward or take over whatever lands on a replica that does not own the session.
 */
import { createHash } from 'node:crypto';

/** Connection-level failures (no HTTP answer): the next replica is tried. */
const CONNECTION_FAILURES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EPIPE',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
]);

/** The session id of an episode attempt's gateway session (activities open it under this id). */
export function gatewaySessionId(episodeId: string, attempt: number): string {
  return `${episodeId}:${attempt}`;
}

function score(url: string, key: string): bigint {
  return createHash('sha256').update(url).update('\0').update(key).digest().readBigUInt64BE(0);
}

/** `urls` by descending HRW score for `key`: the first is the session's replica, the rest its fallbacks. */
export function rendezvousOrder(urls: readonly string[], key: string): string[] {
  return urls
    .map((url) => ({ url, score: score(url, key) }))
    .sort((a, b) => (a.score === b.score ? 0 : a.score > b.score ? -1 : 1))
    .map((s) => s.url);
}

/** Whether an error (a socket's, or fetch's with its cause) means the replica was not reached. */
export function isConnectionFailure(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && CONNECTION_FAILURES.has(code)) return true;
  }
  return false;
}

/**
 * `fetch(url + path)` on the first of `urls` (in that order) that can be connected to. `init.body`
 * must be replayable (a string): it is sent again to the next replica.
 */
export async function fetchFirstReachable(urls: readonly string[], path: string, init: RequestInit & { body?: string }): Promise<Response> {
  let failure: unknown = new Error('no gateway URL configured');
  for (const url of urls) {
    try {
      return await fetch(`${url}${path}`, init);
    } catch (error) {
      if (!isConnectionFailure(error) || init.signal?.aborted) throw error;
      failure = error;
    }
  }
  throw failure;
}

/** `fetchFirstReachable` over the replicas in HRW order for `sessionId`. */
export function fetchForSession(urls: readonly string[], sessionId: string, path: string, init: RequestInit & { body?: string }): Promise<Response> {
  return fetchFirstReachable(rendezvousOrder(urls, sessionId), path, init);
}
