import { requestText } from './http-text.js';
import type { PlacementPath } from './protocol.js';

/** An answer of the placement service: its status and its parsed body (undefined when it had none). */
export interface PlacementReply {
  status: number;
  body: unknown;
}

/**
 * How a gateway's RemoteRouter reaches the placement service: over HTTP (`httpTransport`) to a
 * service on any machine, or over the IPC channel of a forked gateway process (`ipcTransport`,
 * ipc-client.ts) to the placement its parent runs.
 */
export interface PlacementTransport {
  /** Where it goes, for log lines. */
  readonly name: string;
  /**
   * Sends one call (`body` undefined: `GET /v1/instances`). Rejects when the service cannot be
   * reached, and with an AbortError when `signal` aborts.
   */
  send(path: PlacementPath, body: object | undefined, signal?: AbortSignal): Promise<PlacementReply>;
}

/** The placement service at `url`, behind bearer `token`, over kept HTTP connections. */
export function httpTransport(url: string, token: string): PlacementTransport {
  return {
    name: url,
    async send(path, body, signal) {
      const headers: Record<string, string> = { authorization: `Bearer ${token}` };
      const answer = await requestText(
        new URL(`${url}${path}`),
        body === undefined ? { method: 'GET', headers, signal } : { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body), signal },
      );
      return { status: answer.status, body: answer.text ? parseJson(answer.text) : undefined };
    },
  };
}

/** A body that is not JSON (a proxy's error page) is kept as its text. */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
