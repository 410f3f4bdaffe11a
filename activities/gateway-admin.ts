import type { SessionInfo } from '../trajectory/index.js';
import type { SessionSummary } from '../gateway/session/session-manager.js';

/** The gateway's admin routes, as the episode's activities call them. */
export class GatewayAdminClient {
  constructor(private readonly options: { url: string; adminToken: string }) {}

  private async post<T>(path: string, body: unknown): Promise<T> {
    const response = await fetch(`${this.options.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${this.options.adminToken}` },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`gateway ${path} answered ${response.status}: ${text.slice(0, 500)}`);
    return JSON.parse(text) as T;
  }

  openSession(input: { sessionId: string; episodeId: string; attempt: number; info: SessionInfo }): Promise<{ sessionId: string; key: string }> {
    return this.post('/admin/v1/sessions', input);
  }

  closeSession(sessionId: string, reason: string): Promise<SessionSummary> {
    return this.post(`/admin/v1/sessions/${encodeURIComponent(sessionId)}/close`, { reason });
  }
}
