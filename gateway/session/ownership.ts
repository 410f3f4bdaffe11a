import type { SessionStore } from '../../trajectory/index.js';

/** Extra wait beyond the ownership TTL before a takeover gives up: clock skew, a slow store. */
const TAKEOVER_MARGIN_MS = 2_000;

/**
 * Which sessions this replica may serve: a session is claimed in the store before it is served
 * from a non-cached state, and every claim is renewed every `ttlMs / 3`, so a replica that dies
 * loses its sessions within `ttlMs` and another can take them over. Commits are fenced by the
 * store against the owner id, so a replica that lost a claim can never write a turn.
 */
export class SessionOwnership {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: SessionStore,
    /** This replica's id; a restart with the same id owns its sessions again at once. */
    readonly owner: string,
    readonly ttlMs: number,
    private readonly log: (line: string) => void,
  ) {}

  /** True when this replica owns the session now (it had no owner, was ours, or its claim lapsed). */
  claim(sessionId: string): Promise<boolean> {
    return this.store.claimSession(sessionId, this.owner, this.ttlMs);
  }

  /**
   * Waits for the owner's claim to lapse and takes the session over: true when it is ours, false
   * when the owner kept renewing past `ttlMs` + a margin (alive but unreachable) or `signal` fired.
   */
  async takeOver(sessionId: string, signal: AbortSignal): Promise<boolean> {
    const deadline = Date.now() + this.ttlMs + TAKEOVER_MARGIN_MS;
    const interval = Math.min(1_000, Math.max(50, Math.floor(this.ttlMs / 10)));
    for (;;) {
      if (signal.aborted) return false;
      if (await this.claim(sessionId)) return true;
      if (Date.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, interval));
    }
  }

  /** Renews every session this replica owns, periodically, until `close`. */
  start(): void {
    this.timer = setInterval(() => {
      this.store.renewSessions(this.owner, this.ttlMs).catch((error: unknown) => this.log(`session renewal failed: ${(error as Error).message}`));
    }, Math.max(1, Math.floor(this.ttlMs / 3)));
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
  }
}
