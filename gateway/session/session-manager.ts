import { randomBytes } from 'node:crypto';
import type { SessionInfo, SessionRecord, Store } from '../../trajectory/index.js';
import { SessionMovedError, UnknownSessionError } from './errors.js';
import type { SessionOwnership } from './ownership.js';
import { GatewaySession } from './session.js';
import { driftInputs } from './drift.js';
import type { DriftChecker } from './drift-checker.js';

/** What closing a session reports back to the episode (small: it travels in Temporal payloads). */
export interface SessionSummary {
  sessionId: string;
  chains: number;
  turns: number;
  toolCalls: number;
  rollbacks: number;
  /** Sampled tokens that rollbacks dropped from training. */
  rolledBackTokens: number;
  /** Tokens of all chains: prompt and sampled. */
  tokens: number;
  sampledTokens: number;
  terminationReason: string | undefined;
  /** Oldest policy version that sampled a live token of the session; null when none was sampled. */
  minVersion: number | null;
  /** Newest policy version that sampled a live token of the session; null when none was sampled. */
  maxVersion: number | null;
}

/**
 * Where a request for a session is served: here (cached, claimed now, or unknown or closed, which
 * the route answers itself), or at the replica that owns it.
 */
export type SessionLocation = { kind: 'here' } | { kind: 'elsewhere'; sessionId: string; owner: string };

/**
 * Sessions by key. Live state is kept in memory for the sessions this replica owns and rebuilt
 * from the store when it claims one (first use, a restart, a takeover), since every committed
 * turn is written through.
 */
export class SessionManager {
  private readonly live = new Map<string, GatewaySession>();

  constructor(
    private readonly store: Store,
    private readonly drift: DriftChecker,
    private readonly ownership: SessionOwnership,
  ) {}

  /** Sessions this process holds in memory. */
  get liveCount(): number {
    return this.live.size;
  }

  /** Where requests with this key are served. */
  async locateByKey(key: string): Promise<SessionLocation> {
    if (this.live.has(key)) return { kind: 'here' };
    return this.locate(await this.store.getSessionByKey(key));
  }

  /** Where requests for this session id are served. */
  async locateById(sessionId: string): Promise<SessionLocation> {
    const record = await this.store.getSession(sessionId);
    if (record && this.live.has(record.key)) return { kind: 'here' };
    return this.locate(record);
  }

  private async locate(record: SessionRecord | undefined): Promise<SessionLocation> {
    if (!record || record.status !== 'open' || (await this.ownership.claim(record.sessionId))) return { kind: 'here' };
    // Read again: the owner seen before the claim may have lapsed and been replaced since.
    const owner = (await this.store.getSession(record.sessionId))?.owner;
    return owner && owner !== this.ownership.owner ? { kind: 'elsewhere', sessionId: record.sessionId, owner } : { kind: 'here' };
  }

  /** Forgets a cached session (its ownership moved): the next request claims and rebuilds it. */
  drop(session: GatewaySession): void {
    if (this.live.get(session.record.key) === session) this.live.delete(session.record.key);
  }

  /** Idempotent by session id: a retried open returns the first key. */
  async open(input: { sessionId: string; episodeId: string; attempt: number; info: SessionInfo }): Promise<{ sessionId: string; key: string }> {
    const record = await this.store.createSession({ ...input, key: `sk-${randomBytes(24).toString('hex')}` });
    return { sessionId: record.sessionId, key: record.key };
  }

  /** The open session for a key; throws for unknown or closed keys. */
  async get(key: string): Promise<GatewaySession> {
    const cached = this.live.get(key);
    if (cached) return cached;
    const record = await this.store.getSessionByKey(key);
    if (!record || record.status !== 'open') throw new UnknownSessionError();
    if (!(await this.ownership.claim(record.sessionId))) throw new SessionMovedError(`session ${record.sessionId} is owned by another replica`);
    const session = GatewaySession.restore(record, await this.store.loadTurns(record.sessionId));
    this.live.set(key, session);
    return session;
  }

  async close(sessionId: string, reason: string): Promise<SessionSummary | undefined> {
    const record = await this.store.getSession(sessionId);
    if (!record) return undefined;
    // Fences the close like a commit: a replica that does not own the session must not close it.
    if (record.status === 'open' && !(await this.ownership.claim(sessionId))) {
      throw new SessionMovedError(`session ${sessionId} is owned by another replica`);
    }
    const turns = await this.store.loadTurns(sessionId);
    const session = this.live.get(record.key) ?? GatewaySession.restore(record, turns);
    await this.store.saveChainReports(sessionId, await this.drift.check(driftInputs(session.chains, turns)));
    await this.store.closeSession(sessionId, session.terminationReason ?? reason);
    this.live.delete(record.key);
    const tokens = session.chains.reduce((sum, c) => sum + c.tokens.length, 0);
    const live = turns.filter((t) => !t.rolledBack);
    const sampledTokens = live.reduce((sum, t) => sum + t.sampled.length, 0);
    const versions = live.flatMap((t) => t.sampledVersions);
    return {
      sessionId,
      chains: session.chains.filter((c) => c.turns.length > 0).length,
      turns: session.liveTurns,
      toolCalls: session.toolCalls,
      rollbacks: session.rollbacks,
      rolledBackTokens: session.rolledBackTokens,
      tokens,
      sampledTokens,
      terminationReason: session.terminationReason,
      minVersion: versions.length > 0 ? versions.reduce((a, b) => Math.min(a, b)) : null,
      maxVersion: versions.length > 0 ? versions.reduce((a, b) => Math.max(a, b)) : null,
    };
  }
}
