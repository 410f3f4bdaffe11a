/** This gateway as one of several replicas sharing the store; every key optional. */
export interface ReplicaOptions {
  /**
   * The replica's id: sessions it owns are claimed under it, so a restart with the same id serves
   * them again at once. Default the host name (one gateway per host); the stack passes
   * `gateway.replicaId` (default `<hostname>:<port>`).
   */
  id?: string;
  /** The URL other replicas forward requests to. Default the URL it listens on. */
  advertiseUrl?: string;
  /** How long a session stays owned without renewal (renewed every third of it), ms. Default 10,000. */
  sessionOwnershipTtlMs?: number;
  /** Interval between reads of the stored policy state, ms. Default 500. */
  policyPollMs?: number;
}

export const REPLICA_DEFAULTS = { sessionOwnershipTtlMs: 10_000, policyPollMs: 500 } as const;
