/** The policy state the gateway keeps (contract: GET /admin/v1/policy). */
export interface PolicyState {
  version: number;
  paused: boolean;
}

/** The answer to a pause, once the gateway is quiescent. */
export interface PauseResult extends PolicyState {
  paused: true;
  /** In-flight turns that were allowed to complete (mode `finish`). */
  finished: number;
  /** In-flight generations aborted, their partial tokens kept for resumption (mode `abort`). */
  aborted: number;
}

export type PauseMode = 'finish' | 'abort';

/** The gateway answered a policy route with an error; `status` and `body` are its own. */
export class GatewayPolicyError extends Error {
  override name = 'GatewayPolicyError';
  constructor(
    readonly status: number,
    readonly body: unknown,
    message: string,
  ) {
    super(message);
  }
}

/** The gateway's admin policy routes (pause, resume, version), behind its admin token. */
export class PolicyClient {
  constructor(private readonly options: { url: string; adminToken: string }) {}

  private async call<T>(method: 'GET' | 'POST', route: string, body?: unknown): Promise<T> {
    const response = await fetch(`${this.options.url}${route}`, {
      method,
      headers: { authorization: `Bearer ${this.options.adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Not JSON: the text itself is the best description.
    }
    if (!response.ok) throw new GatewayPolicyError(response.status, parsed, `gateway ${method} ${route} answered ${response.status}: ${text.slice(0, 500)}`);
    return parsed as T;
  }

  get(): Promise<PolicyState> {
    return this.call('GET', '/admin/v1/policy');
  }

  /** Answers once the gateway is quiescent; new model calls wait (not rejected) until resume. */
  pause(mode: PauseMode): Promise<PauseResult> {
    return this.call('POST', '/admin/v1/policy/pause', { mode });
  }

  /** `version` must be at least the current version. */
  resume(version: number): Promise<PolicyState> {
    return this.call('POST', '/admin/v1/policy/resume', { version });
  }
}
