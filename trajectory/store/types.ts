import type { LogprobsMode, Sampling } from '../../activities/types.js';

/**
 * The store: everything that more than one process or host must agree on. Two backends implement
 * it, chosen by `store.url`: SQLite (one machine, the embedded default) and PostgreSQL (many
 * machines). Every method is asynchronous, so callers never know which backend they talk to.
 */

/** Who a gateway session belongs to; fixed when the session opens. */
export interface SessionInfo {
  batchId: string;
  taskId: string;
  groupId: string;
  episodeIndex: number;
  agentName: string;
  /** Engine instance the scheduler chose for this episode. */
  homeInstance: string;
  budgets: { maxTurns: number; maxContextTokens: number; maxWallTimeMs: number };
  sampling: Sampling;
}

export interface SessionRecord {
  sessionId: string;
  key: string;
  episodeId: string;
  attempt: number;
  info: SessionInfo;
  status: 'open' | 'closed';
  terminationReason: string | null;
  createdAt: number;
  closedAt: number | null;
  /** Gateway replica id holding the session (`claimSession`), null before the first claim. */
  owner: string | null;
  /** When the owner's claim lapses unless renewed (ms since the epoch), null with no owner. */
  ownerUntil: number | null;
}

/** One model call committed to a chain: the prompt tokens it appended and what it sampled. */
export interface StoredTurn {
  sessionId: string;
  chainIndex: number;
  /** Order of commits in the chain, rolled-back turns included. */
  seq: number;
  /** Position in the chain after rollbacks. */
  turnIndex: number;
  promptDelta: number[];
  sampled: number[];
  logprobs: number[];
  finishReason: string;
  cachedTokens: number;
  /** Temperature the turn was sampled at; null in turns recorded before it was kept. */
  temperature: number | null;
  /** What log-probs `logprobs` holds (raw or processed); null in turns recorded before it was kept. */
  logprobsMode: LogprobsMode | null;
  /** Policy version of the turn's last sampled token (the version it committed on). */
  version: number;
  /**
   * Policy version that sampled each token of `sampled`: a turn aborted by a pause and resumed
   * after a weight update holds two versions.
   */
  sampledVersions: number[];
  tLlmS: number;
  /** Canonical messages this turn appended to the chain's history (JSON). */
  messagesJson: string;
  /** Canonical assistant message this turn produced (JSON). */
  replyJson: string;
  toolsJson: string | null;
  rolledBack: boolean;
}

/**
 * An OpenAI Responses answer kept for `previous_response_id`: the full input it continued (earlier
 * responses already prepended) and its output items, both as JSON arrays of items.
 */
export interface StoredResponse {
  sessionId: string;
  responseId: string;
  inputJson: string;
  outputJson: string;
}

/**
 * The drift check of one chain at close: where a full render of the chain's history with the chat
 * template first differs from the tokens the engine saw (-1: nowhere), and how many live turns
 * were sampled after that point.
 */
export interface ChainReport {
  chainIndex: number;
  driftOffset: number;
  driftTurns: number;
}

/** How an episode ended, written once by the episode's close step. */
export interface EpisodeRecord {
  episodeId: string;
  batchId: string;
  taskId: string;
  groupId: string;
  episodeIndex: number;
  agentName: string;
  /** The gateway session of the attempt that counts; null when no attempt got that far. */
  sessionId: string | null;
  outcome: 'ok' | 'infra_error';
  terminationReason: string;
  reward: number | null;
  rewardInfo: Record<string, unknown>;
  numTurns: number;
  numToolCalls: number;
  tEpisodeS: number;
  tEnvS: number;
}

/** The gateway's policy state: the weight version engines serve, and whether generation is paused. */
export interface PolicyState {
  version: number;
  paused: boolean;
}

/** An engine slot held by a running episode (episode admission). */
export interface AdmissionLease {
  episodeId: string;
  instance: string;
  expiresAt: number;
}

/** An instance as admission sees it at one moment. */
export interface AdmissionCandidate {
  instance: string;
  /** Episodes it may run at once. */
  slots: number;
  /** Whether it may take a new episode now (healthy). */
  available: boolean;
}

/** A log-prob consistency report stored with its batch. */
export interface StoredReport {
  reportId: string;
  batchId: string;
  createdAt: number;
  json: string;
}

/** A live process that registered itself: a worker host queue or a gateway replica. */
export interface Registration {
  /** `host` (a worker's sandbox host queue) or `gateway` (a gateway replica). */
  kind: 'host' | 'gateway';
  /** Host queue name, or gateway replica id. */
  id: string;
  /** For a gateway replica, its URL; for a host, its host id. */
  address: string;
  lastSeenAt: number;
}

/** A write lost a race with another process (a turn already committed, a session owned elsewhere). */
export class StoreConflictError extends Error {
  override name = 'StoreConflictError';
}

export interface SessionStore {
  /** Idempotent: a retried open with the same id returns the session the first call made. */
  createSession(s: { sessionId: string; key: string; episodeId: string; attempt: number; info: SessionInfo }): Promise<SessionRecord>;
  getSession(sessionId: string): Promise<SessionRecord | undefined>;
  getSessionByKey(key: string): Promise<SessionRecord | undefined>;
  closeSession(sessionId: string, terminationReason: string): Promise<void>;
  /**
   * Makes `owner` (a gateway replica id) the session's owner until `now + ttlMs` when it has no
   * owner, is already `owner`'s, or its owner's claim lapsed. True when `owner` holds it now.
   */
  claimSession(sessionId: string, owner: string, ttlMs: number, now?: number): Promise<boolean>;
  /** Extends every open session `owner` holds (one statement per renewal round). */
  renewSessions(owner: string, ttlMs: number, now?: number): Promise<void>;
  /**
   * Writes a turn and, in the same transaction, marks the turn it replaces as rolled back. Given
   * `owner`, the commit happens only while `owner` owns the session; a turn already committed at
   * this (chain, seq), or a lost ownership, is a `StoreConflictError`.
   */
  commitTurn(turn: StoredTurn, options?: { rolledBackSeq?: number; owner?: string }): Promise<void>;
  /** Every turn of a session, rolled-back ones included, in chain and commit order. */
  loadTurns(sessionId: string): Promise<StoredTurn[]>;
  saveResponse(r: StoredResponse): Promise<void>;
  /** A stored response of this session only: a key never sees another session's responses. */
  getResponse(sessionId: string, responseId: string): Promise<StoredResponse | undefined>;
  saveChainReports(sessionId: string, reports: ChainReport[]): Promise<void>;
  loadChainReports(sessionId: string): Promise<ChainReport[]>;
}

export interface EpisodeStore {
  /** Upsert: a retried close step rewrites the same row, so each episode is delivered once. */
  recordEpisode(e: EpisodeRecord): Promise<void>;
  listEpisodes(batchId: string): Promise<EpisodeRecord[]>;
  /** The episodes of one group of a batch (re-runs included), in sample order. */
  listGroupEpisodes(batchId: string, groupId: string): Promise<EpisodeRecord[]>;
}

export interface PolicyStore {
  /** The stored policy state; version 0, not paused, before the first pause or resume. */
  loadPolicy(): Promise<PolicyState>;
  /** Sets paused, keeping the version. */
  pausePolicy(): Promise<PolicyState>;
  /**
   * Serves `version` unpaused, atomically, unless a newer version is already stored; `applied`
   * false and the stored state then.
   */
  resumePolicy(version: number): Promise<{ applied: boolean; state: PolicyState }>;
}

export interface LeaseStore {
  /**
   * Admits the episode on the candidate with the lowest share of slots in use (expired leases
   * not counted, unavailable candidates skipped), atomically across every process. Idempotent: an
   * episode that holds a live lease gets it back.
   */
  tryAdmit(episodeId: string, candidates: AdmissionCandidate[], ttlMs: number, now?: number): Promise<AdmissionLease | undefined>;
  /** Extends a running episode's lease (re-taking it if it had expired). */
  renewLease(episodeId: string, instance: string, ttlMs: number, now?: number): Promise<void>;
  releaseLease(episodeId: string): Promise<void>;
  /** Drops the leases of episodes whose id starts with `prefix` (an abandoned batch); how many. */
  releaseLeasesWithPrefix(prefix: string): Promise<number>;
  /** Leases live at `now`. */
  listLeases(now?: number): Promise<AdmissionLease[]>;
  /** Leases taken under a longer TTL than `ttlMs` are cut to it (a configuration change). */
  capLeases(ttlMs: number, now?: number): Promise<void>;
}

/** How one sample of a batch ended: its reward when ok, else why not (`failure`). */
export interface BatchResult {
  batchId: string;
  groupId: string;
  sample: number;
  /** The episode workflow that ended it (a stale re-run has its own id). */
  episodeId: string;
  reward: number | null;
  failure: string | null;
}

/** A group of a batch whose every sample has ended, numbered in the order the groups finished. */
export interface BatchGroupRecord {
  batchId: string;
  groupId: string;
  taskId: string;
  /** 0, 1, ... in finish order: the position the `finishedGroups` cursor counts. */
  seq: number;
  nRequested: number;
  status: string;
  /** The group's file as JSON, or null (filtered and failed groups have none). */
  fileJson: string | null;
  /** For an `export_failed` group: the ok episodes whose rows are not in its file. */
  missingEpisodeIds: string[];
}

export interface BatchDataStore {
  /** Upsert by (batch, group, sample): a retried record rewrites the same row. */
  recordBatchResult(r: BatchResult): Promise<void>;
  /** The recorded endings of these groups of a batch, by group id and sample. */
  listBatchResults(batchId: string, groupIds: string[]): Promise<BatchResult[]>;
  /** Upsert by (batch, group): a retried finish rewrites the same row. */
  finishBatchGroup(g: BatchGroupRecord): Promise<void>;
  /** At most `limit` finished groups of a batch from finish position `fromSeq` on, in finish order. */
  listBatchGroups(batchId: string, fromSeq: number, limit: number): Promise<BatchGroupRecord[]>;
  /** Adds groups to the acknowledged set; returns the whole set, in acknowledgement order. */
  ackGroups(batchId: string, groupIds: string[]): Promise<string[]>;
  ackedGroups(batchId: string): Promise<string[]>;
  saveReport(report: StoredReport): Promise<void>;
  /** Stored reports of a batch, oldest first. */
  listReports(batchId: string): Promise<StoredReport[]>;
  getReport(reportId: string): Promise<StoredReport | undefined>;
}

export interface RegistryStore {
  /** Records (or refreshes) a live registration. */
  register(r: Registration): Promise<void>;
  /** Registrations of a kind seen within `maxAgeMs` of `now`. */
  listRegistrations(kind: Registration['kind'], maxAgeMs: number, now?: number): Promise<Registration[]>;
  /** Forgets registrations of a kind not seen for `maxAgeMs`; returns what it forgot. */
  forgetRegistrations(kind: Registration['kind'], maxAgeMs: number, now?: number): Promise<Registration[]>;
}

export interface Store extends SessionStore, EpisodeStore, PolicyStore, LeaseStore, BatchDataStore, RegistryStore {
  /** `sqlite` or `postgres`. */
  readonly backend: 'sqlite' | 'postgres';
  close(): Promise<void>;
}
