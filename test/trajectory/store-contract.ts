import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  StoreConflictError,
  type AdmissionCandidate,
  type EpisodeRecord,
  type SessionInfo,
  type Store,
  type StoredTurn,
} from '../../trajectory/store/types.js';
import { SAMPLING_DEFAULTS } from '../../gateway/sampling-schema.js';

const INFO: SessionInfo = {
  batchId: 'b',
  taskId: 't',
  groupId: 'g',
  episodeIndex: 0,
  agentName: 'builtin',
  homeInstance: 'sim-0',
  budgets: { maxTurns: 8, maxContextTokens: 32_768, maxWallTimeMs: 60_000 },
  sampling: { ...SAMPLING_DEFAULTS, maxTokens: 512 },
};

function turn(sessionId: string, chainIndex: number, seq: number, overrides: Partial<StoredTurn> = {}): StoredTurn {
  return {
    sessionId,
    chainIndex,
    seq,
    turnIndex: seq,
    promptDelta: [1, 2, 151_643, 2_147_483_647, -1],
    sampled: [7, 8, 9],
    // Exactly representable in float32, so they come back equal.
    logprobs: [-0.5, -1.25, 0],
    finishReason: 'stop',
    cachedTokens: 4,
    temperature: 1,
    logprobsMode: 'raw',
    version: 2,
    sampledVersions: [1, 2, 2],
    tLlmS: 0.123456789,
    messagesJson: '[{"role":"user","content":"hi"}]',
    replyJson: '{"role":"assistant","content":"ok"}',
    toolsJson: null,
    rolledBack: false,
    ...overrides,
  };
}

function episode(batchId: string, groupId: string, episodeIndex: number, overrides: Partial<EpisodeRecord> = {}): EpisodeRecord {
  return {
    episodeId: `${batchId}/${groupId}/${episodeIndex}`,
    batchId,
    taskId: 'task',
    groupId,
    episodeIndex,
    agentName: 'builtin',
    sessionId: null,
    outcome: 'ok',
    terminationReason: 'done',
    reward: 1,
    rewardInfo: { passed: 3, failed: 0 },
    numTurns: 4,
    numToolCalls: 2,
    tEpisodeS: 12.5,
    tEnvS: 3.25,
    ...overrides,
  };
}

/**
 * The behaviour every `Store` backend must have. `open` opens another handle (another process, as
 * far as the store can tell) on one shared store, empty before the suite's first call; each test
 * uses ids of its own, so tests do not see each other's rows.
 */
export function storeContract(name: string, open: () => Promise<Store>): void {
  describe(`store contract: ${name}`, () => {
    let store: Store;
    const handles: Store[] = [];
    let unique = 0;
    const id = (what: string): string => `${what}-${++unique}`;
    /** `count` more handles on the same store, closed after the suite. */
    const moreHandles = async (count: number): Promise<Store[]> => {
      const opened = await Promise.all(Array.from({ length: count }, open));
      handles.push(...opened);
      return opened;
    };
    const newSession = async (): Promise<string> => {
      const sessionId = id('session');
      await store.createSession({ sessionId, key: `key-${sessionId}`, episodeId: id('episode'), attempt: 0, info: INFO });
      return sessionId;
    };

    beforeAll(async () => {
      store = await open();
    });
    afterAll(async () => {
      await Promise.all([store, ...handles].map((s) => s.close()));
    });

    it('names its backend', () => {
      expect(['sqlite', 'postgres']).toContain(store.backend);
    });

    describe('sessions', () => {
      it('creates a session once: a retried create returns the first record', async () => {
        const before = Date.now();
        const first = await store.createSession({ sessionId: 's-create', key: 'k-create', episodeId: 'e1', attempt: 1, info: INFO });
        expect(first).toEqual({
          sessionId: 's-create',
          key: 'k-create',
          episodeId: 'e1',
          attempt: 1,
          info: INFO,
          status: 'open',
          terminationReason: null,
          createdAt: expect.any(Number),
          closedAt: null,
          owner: null,
          ownerUntil: null,
        });
        expect(first.createdAt).toBeGreaterThanOrEqual(before);
        const retried = await store.createSession({ sessionId: 's-create', key: 'k-create', episodeId: 'e1', attempt: 1, info: { ...INFO, taskId: 'other' } });
        expect(retried).toEqual(first);
      });

      it('finds a session by id and by key, and nothing for unknown ones', async () => {
        const sessionId = await newSession();
        expect((await store.getSession(sessionId))?.key).toBe(`key-${sessionId}`);
        expect((await store.getSessionByKey(`key-${sessionId}`))?.sessionId).toBe(sessionId);
        expect(await store.getSession('no-such-session')).toBeUndefined();
        expect(await store.getSessionByKey('no-such-key')).toBeUndefined();
      });

      it('closes a session once: a second close keeps the first reason and time', async () => {
        const sessionId = await newSession();
        await store.closeSession(sessionId, 'budget');
        const closed = await store.getSession(sessionId);
        expect(closed).toMatchObject({ status: 'closed', terminationReason: 'budget' });
        expect(closed?.closedAt).toEqual(expect.any(Number));
        await store.closeSession(sessionId, 'later');
        expect(await store.getSession(sessionId)).toEqual(closed);
      });

      it('claims a free, own or lapsed session, and not one another owner holds', async () => {
        const sessionId = await newSession();
        const t0 = Date.now();
        expect(await store.claimSession(sessionId, 'gw-a', 1_000, t0)).toBe(true);
        expect(await store.claimSession(sessionId, 'gw-a', 1_000, t0 + 10)).toBe(true);
        expect(await store.claimSession(sessionId, 'gw-b', 1_000, t0 + 500)).toBe(false);
        expect(await store.claimSession(sessionId, 'gw-b', 1_000, t0 + 1_010)).toBe(true);
        expect(await store.claimSession(sessionId, 'gw-a', 1_000, t0 + 1_020)).toBe(false);
        expect(await store.claimSession('no-such-session', 'gw-a', 1_000, t0)).toBe(false);
        expect(await store.getSession(sessionId)).toMatchObject({ owner: 'gw-b', ownerUntil: t0 + 2_010 });
      });

      it("renews the owner's open sessions only", async () => {
        const [mine, closed, theirs] = [await newSession(), await newSession(), await newSession()];
        const t0 = Date.now();
        for (const s of [mine, closed]) expect(await store.claimSession(s, 'gw-renew', 1_000, t0)).toBe(true);
        expect(await store.claimSession(theirs, 'gw-other', 1_000, t0)).toBe(true);
        await store.closeSession(closed, 'done');
        await store.renewSessions('gw-renew', 1_000, t0 + 500);
        expect(await store.claimSession(mine, 'gw-thief', 1_000, t0 + 1_200)).toBe(false);
        expect(await store.claimSession(closed, 'gw-thief', 1_000, t0 + 1_200)).toBe(true);
        expect(await store.claimSession(theirs, 'gw-thief', 1_000, t0 + 1_200)).toBe(true);
        expect(await store.claimSession(mine, 'gw-thief', 1_000, t0 + 1_600)).toBe(true);
      });
    });

    describe('turns', () => {
      it('stores turns exactly and loads them in chain and commit order', async () => {
        const sessionId = await newSession();
        const turns = [
          turn(sessionId, 1, 0, { toolsJson: '[{"type":"function"}]' }),
          turn(sessionId, 0, 1, { promptDelta: [], sampled: [42], logprobs: [-3.5], sampledVersions: [2] }),
          turn(sessionId, 0, 0, { finishReason: 'length', rolledBack: true }),
        ];
        for (const t of turns) await store.commitTurn(t);
        expect(await store.loadTurns(sessionId)).toEqual([turns[2], turns[1], turns[0]]);
        expect(await store.loadTurns('no-such-session')).toEqual([]);
      });

      it("keeps each turn's temperature and log-prob mode exactly, null where a turn recorded none", async () => {
        const sessionId = await newSession();
        const turns = [
          turn(sessionId, 0, 0, { temperature: 0.7, logprobsMode: 'processed' }),
          turn(sessionId, 0, 1, { temperature: 0, logprobsMode: 'raw' }),
          turn(sessionId, 0, 2, { temperature: null, logprobsMode: null }),
        ];
        for (const t of turns) await store.commitTurn(t);
        expect((await store.loadTurns(sessionId)).map((t) => [t.temperature, t.logprobsMode])).toEqual([
          [0.7, 'processed'],
          [0, 'raw'],
          [null, null],
        ]);
      });

      it('stores long token arrays exactly', async () => {
        const sessionId = await newSession();
        const promptDelta = Array.from({ length: 4_096 }, (_, i) => (i * 7_919) % 151_936);
        const sampled = Array.from({ length: 1_024 }, (_, i) => (i * 104_729) % 151_936);
        const logprobs = sampled.map((_, i) => Math.fround(-i / 1_024));
        const t = turn(sessionId, 0, 0, { promptDelta, sampled, logprobs, sampledVersions: sampled.map((_, i) => (i < 512 ? 3 : 4)) });
        await store.commitTurn(t);
        expect(await store.loadTurns(sessionId)).toEqual([t]);
      });

      it('marks the replaced turn rolled back in the same commit', async () => {
        const sessionId = await newSession();
        await store.commitTurn(turn(sessionId, 0, 0));
        await store.commitTurn(turn(sessionId, 0, 1, { turnIndex: 0 }), { rolledBackSeq: 0 });
        expect((await store.loadTurns(sessionId)).map((t) => [t.seq, t.turnIndex, t.rolledBack])).toEqual([
          [0, 0, true],
          [1, 0, false],
        ]);
      });

      it('refuses a second turn at the same chain and seq, leaving no rollback mark behind', async () => {
        const sessionId = await newSession();
        await store.commitTurn(turn(sessionId, 0, 0));
        await store.commitTurn(turn(sessionId, 0, 1));
        await expect(store.commitTurn(turn(sessionId, 0, 1, { sampled: [99] }), { rolledBackSeq: 0 })).rejects.toBeInstanceOf(StoreConflictError);
        expect((await store.loadTurns(sessionId)).map((t) => [t.seq, t.sampled, t.rolledBack])).toEqual([
          [0, [7, 8, 9], false],
          [1, [7, 8, 9], false],
        ]);
        // The same seq on another chain is another turn.
        await store.commitTurn(turn(sessionId, 1, 1));
      });

      it('commits exactly one of two racing commits of one seq from two handles', async () => {
        const sessionId = await newSession();
        const [a, b] = await moreHandles(2);
        const results = await Promise.allSettled([a!.commitTurn(turn(sessionId, 0, 0, { sampled: [1] })), b!.commitTurn(turn(sessionId, 0, 0, { sampled: [2] }))]);
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        const rejected = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
        expect(rejected?.reason).toBeInstanceOf(StoreConflictError);
        expect(await store.loadTurns(sessionId)).toHaveLength(1);
      });

      it('commits for an owner only while it owns the session', async () => {
        const sessionId = await newSession();
        const now = Date.now();
        expect(await store.claimSession(sessionId, 'gw-a', 60_000, now)).toBe(true);
        await store.commitTurn(turn(sessionId, 0, 0), { owner: 'gw-a' });
        await expect(store.commitTurn(turn(sessionId, 0, 1), { owner: 'gw-b' })).rejects.toBeInstanceOf(StoreConflictError);
        // gw-a's claim lapses and gw-b takes over: gw-a's late commit must not land, nor mark anything.
        expect(await store.claimSession(sessionId, 'gw-b', 60_000, now + 120_000)).toBe(true);
        await expect(store.commitTurn(turn(sessionId, 0, 1), { owner: 'gw-a', rolledBackSeq: 0 })).rejects.toBeInstanceOf(StoreConflictError);
        await store.commitTurn(turn(sessionId, 0, 1), { owner: 'gw-b' });
        expect((await store.loadTurns(sessionId)).map((t) => [t.seq, t.rolledBack])).toEqual([
          [0, false],
          [1, false],
        ]);
      });

      it('refuses an owner whose claim lapsed, even with no other owner, and a session nobody claimed', async () => {
        const lapsed = await newSession();
        expect(await store.claimSession(lapsed, 'gw-a', 1_000, Date.now() - 5_000)).toBe(true);
        await expect(store.commitTurn(turn(lapsed, 0, 0), { owner: 'gw-a' })).rejects.toBeInstanceOf(StoreConflictError);
        const unclaimed = await newSession();
        await expect(store.commitTurn(turn(unclaimed, 0, 0), { owner: 'gw-a' })).rejects.toBeInstanceOf(StoreConflictError);
        await expect(store.commitTurn(turn('no-such-session', 0, 0), { owner: 'gw-a' })).rejects.toBeInstanceOf(StoreConflictError);
        expect(await store.loadTurns(lapsed)).toEqual([]);
        expect(await store.loadTurns(unclaimed)).toEqual([]);
      });

      it('lets a fenced commit through after the owner re-claims its lapsed session', async () => {
        const sessionId = await newSession();
        expect(await store.claimSession(sessionId, 'gw-a', 1_000, Date.now() - 5_000)).toBe(true);
        expect(await store.claimSession(sessionId, 'gw-a', 60_000)).toBe(true);
        await store.commitTurn(turn(sessionId, 0, 0), { owner: 'gw-a' });
        expect(await store.loadTurns(sessionId)).toHaveLength(1);
      });
    });

    describe('responses and chain reports', () => {
      it("keeps a response for its own session only, the latest save winning", async () => {
        const [mine, other] = [await newSession(), await newSession()];
        await store.saveResponse({ sessionId: mine, responseId: 'resp_1', inputJson: '[1]', outputJson: '[2]' });
        await store.saveResponse({ sessionId: mine, responseId: 'resp_1', inputJson: '[3]', outputJson: '[4]' });
        expect(await store.getResponse(mine, 'resp_1')).toEqual({ sessionId: mine, responseId: 'resp_1', inputJson: '[3]', outputJson: '[4]' });
        expect(await store.getResponse(other, 'resp_1')).toBeUndefined();
        expect(await store.getResponse(mine, 'resp_2')).toBeUndefined();
      });

      it('keeps chain reports per session in chain order, a re-save replacing a chain', async () => {
        const [mine, other] = [await newSession(), await newSession()];
        await store.saveChainReports(mine, [
          { chainIndex: 2, driftOffset: -1, driftTurns: 0 },
          { chainIndex: 0, driftOffset: 120, driftTurns: 3 },
        ]);
        await store.saveChainReports(mine, [{ chainIndex: 2, driftOffset: 50, driftTurns: 1 }]);
        await store.saveChainReports(mine, []);
        expect(await store.loadChainReports(mine)).toEqual([
          { chainIndex: 0, driftOffset: 120, driftTurns: 3 },
          { chainIndex: 2, driftOffset: 50, driftTurns: 1 },
        ]);
        expect(await store.loadChainReports(other)).toEqual([]);
      });
    });

    describe('episodes', () => {
      it('records an episode once: a retried close rewrites the row', async () => {
        const batchId = id('batch');
        await store.recordEpisode(episode(batchId, 'g0', 0, { outcome: 'infra_error', reward: null, rewardInfo: {} }));
        const rewritten = episode(batchId, 'g0', 0, { sessionId: 's-9', reward: 0.5, rewardInfo: { nested: { a: [1, 2] } } });
        await store.recordEpisode(rewritten);
        expect(await store.listEpisodes(batchId)).toEqual([rewritten]);
      });

      it('lists a batch by group and sample, and one group in sample order', async () => {
        const batchId = id('batch');
        const records = [episode(batchId, 'g1', 1), episode(batchId, 'g0', 1, { reward: null }), episode(batchId, 'g1', 0), episode(batchId, 'g0', 0)];
        for (const e of records) await store.recordEpisode(e);
        await store.recordEpisode(episode(id('batch'), 'g0', 0));
        expect((await store.listEpisodes(batchId)).map((e) => [e.groupId, e.episodeIndex])).toEqual([
          ['g0', 0],
          ['g0', 1],
          ['g1', 0],
          ['g1', 1],
        ]);
        expect(await store.listGroupEpisodes(batchId, 'g0')).toEqual([records[3], records[1]]);
        expect(await store.listGroupEpisodes(batchId, 'g9')).toEqual([]);
        expect(await store.listEpisodes('no-such-batch')).toEqual([]);
      });
    });

    describe('policy', () => {
      it('starts at version 0 unpaused, pauses keeping the version, and never goes back', async () => {
        expect(await store.loadPolicy()).toEqual({ version: 0, paused: false });
        expect(await store.pausePolicy()).toEqual({ version: 0, paused: true });
        expect(await store.resumePolicy(3)).toEqual({ applied: true, state: { version: 3, paused: false } });
        expect(await store.resumePolicy(3)).toEqual({ applied: true, state: { version: 3, paused: false } });
        expect(await store.pausePolicy()).toEqual({ version: 3, paused: true });
        expect(await store.resumePolicy(2)).toEqual({ applied: false, state: { version: 3, paused: true } });
        const [other] = await moreHandles(1);
        expect(await other!.loadPolicy()).toEqual({ version: 3, paused: true });
      });

      it('ends on the newest of many racing resumes from separate handles', async () => {
        const racers = await moreHandles(4);
        const versions = Array.from({ length: 40 }, (_, i) => 10 + ((i * 17) % 40));
        const results = await Promise.all(versions.map((v, i) => racers[i % racers.length]!.resumePolicy(v)));
        expect(await store.loadPolicy()).toEqual({ version: 49, paused: false });
        for (const [i, r] of results.entries()) {
          expect(r.state.version).toBeGreaterThanOrEqual(versions[i]!);
          if (r.applied) expect(r.state.version).toBe(versions[i]);
        }
      });
    });

    describe('admission leases', () => {
      const candidates = (prefix: string, slots: number[], unavailable: number[] = []): AdmissionCandidate[] =>
        slots.map((n, i) => ({ instance: `${prefix}-${i}`, slots: n, available: !unavailable.includes(i) }));

      it('fills the candidate with the lowest share of slots in use, ties to the earlier one, until none is free', async () => {
        const prefix = id('inst');
        const pool = candidates(prefix, [2, 4]);
        const picks: (string | undefined)[] = [];
        for (let i = 0; i < 7; i++) picks.push((await store.tryAdmit(`${prefix}/e${i}`, pool, 60_000))?.instance);
        const [a, b] = [`${prefix}-0`, `${prefix}-1`];
        expect(picks).toEqual([a, b, b, a, b, b, undefined]);
      });

      it('skips unavailable candidates and returns the lease it made', async () => {
        const prefix = id('inst');
        const now = Date.now();
        const lease = await store.tryAdmit(`${prefix}/e0`, candidates(prefix, [4, 1], [0]), 5_000, now);
        expect(lease).toEqual({ episodeId: `${prefix}/e0`, instance: `${prefix}-1`, expiresAt: now + 5_000 });
        expect(await store.tryAdmit(`${prefix}/e1`, candidates(prefix, [4, 1], [0]), 5_000, now)).toBeUndefined();
        expect(await store.tryAdmit(`${prefix}/e2`, [], 5_000, now)).toBeUndefined();
      });

      it('gives an episode that holds a live lease the same lease back, taking no second slot', async () => {
        const prefix = id('inst');
        const pool = candidates(prefix, [2]);
        const now = Date.now();
        const first = await store.tryAdmit(`${prefix}/e0`, pool, 60_000, now);
        expect(await store.tryAdmit(`${prefix}/e0`, pool, 60_000, now + 1_000)).toEqual(first);
        expect(await store.tryAdmit(`${prefix}/e1`, pool, 60_000, now)).toBeDefined();
        expect(await store.tryAdmit(`${prefix}/e2`, pool, 60_000, now)).toBeUndefined();
      });

      it('does not count or list expired leases, and renewal re-takes an expired one', async () => {
        const prefix = id('inst');
        const pool = candidates(prefix, [1]);
        const t0 = Date.now();
        expect(await store.tryAdmit(`${prefix}/old`, pool, 1_000, t0)).toBeDefined();
        expect(await store.tryAdmit(`${prefix}/new`, pool, 1_000, t0 + 500)).toBeUndefined();
        const mine = (leases: { episodeId: string }[]) => leases.filter((l) => l.episodeId.startsWith(`${prefix}/`));
        expect(mine(await store.listLeases(t0 + 500))).toHaveLength(1);
        expect(mine(await store.listLeases(t0 + 1_000))).toEqual([]);
        expect(await store.tryAdmit(`${prefix}/new`, pool, 1_000, t0 + 1_500)).toEqual({ episodeId: `${prefix}/new`, instance: `${prefix}-0`, expiresAt: t0 + 2_500 });
        await store.renewLease(`${prefix}/new`, `${prefix}-0`, 1_000, t0 + 2_000);
        expect(mine(await store.listLeases(t0 + 2_800))).toEqual([{ episodeId: `${prefix}/new`, instance: `${prefix}-0`, expiresAt: t0 + 3_000 }]);
        await store.renewLease(`${prefix}/old`, `${prefix}-0`, 1_000, t0 + 5_000);
        expect(mine(await store.listLeases(t0 + 5_500))).toEqual([{ episodeId: `${prefix}/old`, instance: `${prefix}-0`, expiresAt: t0 + 6_000 }]);
      });

      it('frees a slot on release, and releases a batch by id prefix (taken literally)', async () => {
        const prefix = id('inst');
        const pool = candidates(prefix, [8]);
        for (const e of ['b_1/a', 'b_1/b', 'bx1/a', 'b%1/a']) expect(await store.tryAdmit(`${prefix}/${e}`, pool, 60_000)).toBeDefined();
        expect(await store.releaseLeasesWithPrefix(`${prefix}/b_1/`)).toBe(2);
        expect(await store.releaseLeasesWithPrefix(`${prefix}/b_1/`)).toBe(0);
        await store.releaseLease(`${prefix}/b%1/a`);
        await store.releaseLease(`${prefix}/never-admitted`);
        const left = (await store.listLeases()).filter((l) => l.episodeId.startsWith(`${prefix}/`)).map((l) => l.episodeId);
        expect(left).toEqual([`${prefix}/bx1/a`]);
      });

      it('cuts leases taken under a longer TTL to the new one, leaving shorter ones', async () => {
        const prefix = id('inst');
        const pool = candidates(prefix, [2]);
        const now = Date.now();
        await store.tryAdmit(`${prefix}/long`, pool, 600_000, now);
        await store.tryAdmit(`${prefix}/short`, pool, 1_000, now);
        await store.capLeases(10_000, now);
        const leases = (await store.listLeases(now)).filter((l) => l.episodeId.startsWith(`${prefix}/`));
        expect(leases.map((l) => [l.episodeId, l.expiresAt]).sort()).toEqual([
          [`${prefix}/long`, now + 10_000],
          [`${prefix}/short`, now + 1_000],
        ]);
      });

      it('never admits more than the slots across many handles admitting at once', async () => {
        const prefix = id('inst');
        const pool = candidates(prefix, [2, 3, 1], [2]);
        const racers = await moreHandles(6);
        const leases = await Promise.all(
          Array.from({ length: 30 }, (_, i) => racers[i % racers.length]!.tryAdmit(`${prefix}/e${i}`, pool, 60_000)),
        );
        const admitted = leases.filter((l) => l !== undefined);
        expect(admitted).toHaveLength(5);
        const perInstance = (instance: string) => admitted.filter((l) => l.instance === instance).length;
        expect([perInstance(`${prefix}-0`), perInstance(`${prefix}-1`), perInstance(`${prefix}-2`)]).toEqual([2, 3, 0]);
        expect((await store.listLeases()).filter((l) => l.episodeId.startsWith(`${prefix}/`))).toHaveLength(5);
      });
    });

    describe('batch data', () => {
      it('keeps acknowledgements in first-acknowledgement order, idempotently', async () => {
        const batchId = id('batch');
        expect(await store.ackedGroups(batchId)).toEqual([]);
        expect(await store.ackGroups(batchId, ['g2', 'g0', 'g2'])).toEqual(['g2', 'g0']);
        expect(await store.ackGroups(batchId, ['g1', 'g0'])).toEqual(['g2', 'g0', 'g1']);
        expect(await store.ackGroups(batchId, [])).toEqual(['g2', 'g0', 'g1']);
        expect(await store.ackGroups(id('batch'), ['g9'])).toEqual(['g9']);
        expect(await store.ackedGroups(batchId)).toEqual(['g2', 'g0', 'g1']);
      });

      it('keeps every group once when handles acknowledge the same groups at once, in opposite orders', async () => {
        const racers = await moreHandles(4);
        const groups = Array.from({ length: 100 }, (_, i) => `g${i}`);
        for (let round = 0; round < 5; round++) {
          const batchId = id('batch');
          const answers = await Promise.all(racers.map((r, i) => r.ackGroups(batchId, i % 2 ? [...groups].reverse() : groups)));
          for (const answer of answers) expect([...answer].sort()).toEqual([...groups].sort());
          expect(await store.ackedGroups(batchId)).toEqual(answers.at(-1));
        }
      });

      it('lists a batch reports oldest first and finds one by id', async () => {
        const batchId = id('batch');
        const newer = { reportId: id('report'), batchId, createdAt: 2_000, json: '{"n":2}' };
        const older = { reportId: id('report'), batchId, createdAt: 1_000, json: '{"n":1}' };
        await store.saveReport(newer);
        await store.saveReport(older);
        await store.saveReport({ reportId: id('report'), batchId: id('batch'), createdAt: 500, json: '{}' });
        expect(await store.listReports(batchId)).toEqual([older, newer]);
        expect(await store.getReport(newer.reportId)).toEqual(newer);
        expect(await store.getReport('no-such-report')).toBeUndefined();
        expect(await store.listReports('no-such-batch')).toEqual([]);
      });
    });

    describe('batch results and finished groups', () => {
      it('upserts endings by sample and lists them per group', async () => {
        const batchId = id('batch');
        const result = (groupId: string, sample: number, reward: number | null, failure: string | null) => ({ batchId, groupId, sample, episodeId: `${batchId}/${groupId}/${sample}`, reward, failure });
        await store.recordBatchResult(result('g1', 1, null, 'infra_error: x'));
        await store.recordBatchResult(result('g0', 0, 0.5, null));
        await store.recordBatchResult(result('g1', 0, 1, null));
        // A retried record (or a re-run's ending) replaces the sample's row.
        await store.recordBatchResult({ ...result('g1', 1, 0, null), episodeId: `${batchId}/g1/1.r1` });
        await store.recordBatchResult(result('g2', 0, 1, null));
        expect(await store.listBatchResults(batchId, ['g1', 'g0'])).toEqual([result('g0', 0, 0.5, null), result('g1', 0, 1, null), { ...result('g1', 1, 0, null), episodeId: `${batchId}/g1/1.r1` }]);
        expect(await store.listBatchResults(batchId, [])).toEqual([]);
        expect(await store.listBatchResults(id('batch'), ['g0'])).toEqual([]);
      });

      it('lists finished groups in finish order, a page at a time; a retried finish rewrites its row', async () => {
        const batchId = id('batch');
        const group = (groupId: string, seq: number, status = 'failure') => ({ batchId, groupId, taskId: `t-${groupId}`, seq, nRequested: 2, status, fileJson: null, missingEpisodeIds: [] });
        await store.finishBatchGroup(group('g5', 0));
        await store.finishBatchGroup(group('g1', 1));
        await store.finishBatchGroup({ ...group('g3', 2, 'export_failed'), missingEpisodeIds: ['e1'] });
        await store.finishBatchGroup({ ...group('g1', 1, 'finished'), fileJson: '{"uri":"file:///g1.arrow"}' });
        expect((await store.listBatchGroups(batchId, 0, 10)).map((g) => g.groupId)).toEqual(['g5', 'g1', 'g3']);
        expect(await store.listBatchGroups(batchId, 1, 1)).toEqual([{ ...group('g1', 1, 'finished'), fileJson: '{"uri":"file:///g1.arrow"}' }]);
        expect(await store.listBatchGroups(batchId, 2, 5)).toEqual([{ ...group('g3', 2, 'export_failed'), missingEpisodeIds: ['e1'] }]);
        expect(await store.listBatchGroups(batchId, 3, 5)).toEqual([]);
      });
    });

    describe('registry', () => {
      it('lists registrations of a kind seen recently, refreshed in place', async () => {
        const prefix = id('reg');
        const now = Date.now();
        await store.register({ kind: 'gateway', id: `${prefix}-a`, address: 'http://a:1', lastSeenAt: now - 20_000 });
        await store.register({ kind: 'gateway', id: `${prefix}-b`, address: 'http://b:1', lastSeenAt: now - 1_000 });
        await store.register({ kind: 'host', id: `${prefix}-h`, address: 'host-1', lastSeenAt: now });
        const mine = <T extends { id: string }>(rs: T[]): T[] => rs.filter((r) => r.id.startsWith(`${prefix}-`)).sort((x, y) => x.id.localeCompare(y.id));
        expect(mine(await store.listRegistrations('gateway', 10_000, now))).toEqual([
          { kind: 'gateway', id: `${prefix}-b`, address: 'http://b:1', lastSeenAt: now - 1_000 },
        ]);
        await store.register({ kind: 'gateway', id: `${prefix}-a`, address: 'http://a:2', lastSeenAt: now });
        expect(mine(await store.listRegistrations('gateway', 10_000, now)).map((r) => [r.id, r.address])).toEqual([
          [`${prefix}-a`, 'http://a:2'],
          [`${prefix}-b`, 'http://b:1'],
        ]);
        expect(mine(await store.listRegistrations('host', 10_000, now)).map((r) => r.id)).toEqual([`${prefix}-h`]);
      });

      it('forgets the registrations of a kind that aged out, returning them', async () => {
        const prefix = id('reg');
        const now = Date.now();
        const stale = { kind: 'host' as const, id: `${prefix}-stale`, address: 'host-2', lastSeenAt: now - 60_000 };
        await store.register(stale);
        await store.register({ kind: 'host', id: `${prefix}-fresh`, address: 'host-3', lastSeenAt: now });
        await store.register({ kind: 'gateway', id: `${prefix}-old-gw`, address: 'http://c:1', lastSeenAt: now - 60_000 });
        const forgotten = (await store.forgetRegistrations('host', 30_000, now)).filter((r) => r.id.startsWith(`${prefix}-`));
        expect(forgotten).toEqual([stale]);
        expect((await store.forgetRegistrations('host', 30_000, now)).filter((r) => r.id.startsWith(`${prefix}-`))).toEqual([]);
        const hosts = (await store.listRegistrations('host', 3_600_000, now)).filter((r) => r.id.startsWith(`${prefix}-`));
        expect(hosts.map((r) => r.id)).toEqual([`${prefix}-fresh`]);
        const gateways = (await store.listRegistrations('gateway', 3_600_000, now)).filter((r) => r.id.startsWith(`${prefix}-`));
        expect(gateways.map((r) => r.id)).toEqual([`${prefix}-old-gw`]);
      });
    });
  });
}
