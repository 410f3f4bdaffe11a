import type { PolicyState, SessionInfo } from '../trajectory/index.js';
import type { PauseMode, PauseResult } from '../gateway/policy/policy-control.js';
import type { SessionSummary } from '../gateway/session/session-manager.js';
import { fetchFirstReachable, fetchForSession } from '../gateway/client/rendezvous.js';

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

/**
 * The gateway's admin routes, as the episode's activities and the trainer-facing API call them.
 * Session calls go to the session's replica by rendezvous hash of its id (gateway/client); policy
 * calls to the first replica that answers (the receiving one fans out to the others).
 */
export class GatewayAdminClient {
  constructor(private readonly options: { urls: readonly string[]; adminToken: string }) {}

  /** POSTs `body`, or GETs when there is none; an error answer throws. */
  private async call<T>(path: string, body?: unknown, sessionId?: string): Promise<T> {
    const init = {
      method: body === undefined ? 'GET' : 'POST',
      headers: {
        authorization: `Bearer ${this.options.adminToken}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    };
    const response = sessionId === undefined ? await fetchFirstReachable(this.options.urls, path, init) : await fetchForSession(this.options.urls, sessionId, path, init);
    const text = await response.text();
    if (!response.ok) throw new GatewayAdminError(response.status, `gateway ${path} answered ${response.status}: ${text.slice(0, 500)}`);
    return JSON.parse(text) as T;
  }

  openSession(input: { sessionId: string; episodeId: string; attempt: number; info: SessionInfo }): Promise<{ sessionId: string; key: string }> {
    return this.call('/admin/v1/sessions', input, input.sessionId);
  }

  closeSession(sessionId: string, reason: string): Promise<SessionSummary> {
    return this.call(`/admin/v1/sessions/${encodeURIComponent(sessionId)}/close`, { reason }, sessionId);
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
