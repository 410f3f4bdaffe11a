import type { PolicyState, SessionInfo } from '../trajectory/index.js';
import type { PauseMode, PauseResult } from '../gateway/policy/policy-control.js';
import type { SessionSummary } from '../gateway/session/session-manager.js';
import { fetchFirstReachable, fetchForSession } from '../gateway/client/rendezvous.js';
import { readWhole, throughOutage } from '../gateway/client/outage.js';

/** The gateway answered an admin route with an error; `status` is its own, for callers that forward it. */
export class GatewayAdminError extends Error {
  override name = 'GatewayAdminError';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface GatewayAdminOptions {
  urls: readonly string[];
  adminToken: string;
  /**
   * How long session calls (open, close: idempotent by session id) wait through a gateway
   * outage, ms; policy calls never wait, the trainer decides. Default 0: no waiting.
   */
  outageMs?: number;
}

/**
 * The gateway's admin routes, as the episode's activities and the trainer-facing API call them.
 * Session calls go to the session's replica by rendezvous hash of its id (gateway/client); policy
 * calls to the first replica that answers (the receiving one fans out to the others).
 */
export class GatewayAdminClient {
  constructor(private readonly options: GatewayAdminOptions) {}

  /** POSTs `body`, or GETs when there is none; an error answer throws (GatewayOutageError after a long outage). */
  private async call<T>(path: string, body?: unknown, session?: { id: string; signal?: AbortSignal }): Promise<T> {
    const init = {
      method: body === undefined ? 'GET' : 'POST',
      headers: {
        authorization: `Bearer ${this.options.adminToken}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    };
    const response =
      session === undefined
        ? await readWhole(fetchFirstReachable(this.options.urls, path, init))
        : await throughOutage(() => readWhole(fetchForSession(this.options.urls, session.id, path, { ...init, signal: session.signal })), {
            outageMs: this.options.outageMs ?? 0,
            signal: session.signal,
          });
    const { text } = response;
    if (!response.ok) throw new GatewayAdminError(response.status, `gateway ${path} answered ${response.status}: ${text.slice(0, 500)}`);
    return JSON.parse(text) as T;
  }

  openSession(input: { sessionId: string; episodeId: string; attempt: number; info: SessionInfo }, signal?: AbortSignal): Promise<{ sessionId: string; key: string }> {
    return this.call('/admin/v1/sessions', input, { id: input.sessionId, signal });
  }

  closeSession(sessionId: string, reason: string, signal?: AbortSignal): Promise<SessionSummary> {
    return this.call(`/admin/v1/sessions/${encodeURIComponent(sessionId)}/close`, { reason }, { id: sessionId, signal });
  }

  /** The policy version served and whether generation is paused. */
  policy(): Promise<PolicyState> {
    return this.call('/admin/v1/policy');
  }

  /** Answers once no generation runs (see PolicyControl.pause). */
  pausePolicy(mode: PauseMode): Promise<PauseResult> {
    return this.call('/admin/v1/policy/pause', { mode });
  }

  /** Serves `version` (never older than the current one) and ends a pause. */
  resumePolicy(version: number): Promise<PolicyState> {
    return this.call('/admin/v1/policy/resume', { version });
  }
}
