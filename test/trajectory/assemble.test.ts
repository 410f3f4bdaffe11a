import Database from 'better-sqlite3';
import { tableFromIPC } from 'apache-arrow';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { arrowStreamBytes, assembleEpisode, SqliteStore, type EpisodeRecord, type StoredTurn } from '../../trajectory/index.js';

const episode: EpisodeRecord = {
  episodeId: 'b/t/0',
  batchId: 'b',
  taskId: 't',
  groupId: 'b.g0',
  episodeIndex: 0,
  agentName: 'builtin',
  sessionId: 's',
  outcome: 'ok',
  terminationReason: 'stop',
  reward: 1,
  rewardInfo: { passed: 3 },
  numTurns: 2,
  numToolCalls: 1,
  tEpisodeS: 2,
  tEnvS: 0.5,
};

function turn(seq: number, promptDelta: number[], sampled: number[], extra: Partial<StoredTurn> = {}): StoredTurn {
  const version = extra.version ?? 3;
  return {
    sampledVersions: sampled.map(() => version),
    sessionId: 's',
    chainIndex: 0,
    seq,
    turnIndex: seq,
    promptDelta,
    sampled,
    logprobs: sampled.map((_, i) => -0.25 * (i + 1)),
    finishReason: 'stop',
    cachedTokens: 0,
    temperature: 1,
    logprobsMode: 'raw',
    version: 3,
    tLlmS: 0.1,
    messagesJson: '[]',
    replyJson: '{"role":"assistant","content":"x"}',
    toolsJson: null,
    rolledBack: false,
    ...extra,
  };
}

describe('trajectory assembly', () => {
  it('lays live turns end to end, skips rolled-back ones and counts them', () => {
    const turns = [
      turn(0, [1, 2, 3], [10, 11]),
      turn(1, [4], [12, 13, 14], { rolledBack: true }),
      turn(2, [5, 6], [15], { turnIndex: 1, replyJson: '{"role":"assistant","content":"","tool_calls":[{}]}' }),
    ];
    const [row] = assembleEpisode(episode, turns);
    expect(row!.input_ids).toEqual([1, 2, 3, 10, 11, 5, 6, 15]);
    expect(row!.sampled_mask).toEqual([0, 0, 0, 1, 1, 0, 0, 1]);
    expect(row!.loss_mask).toEqual(row!.sampled_mask);
    expect(row!.logprobs).toEqual([0, 0, 0, -0.25, -0.5, 0, 0, -0.25]);
    expect(row!.token_version).toEqual([-1, -1, -1, 3, 3, -1, -1, 3]);
    expect(row!.prompt_length).toBe(3);
    expect(row!.turn_starts).toEqual([3, 7]);
    expect(row!.num_rollbacks).toBe(1);
    expect(row!.num_tool_calls).toBe(1);
    expect(row!).toMatchObject({ trajectory_id: 'b.g0_0_0', is_final_chain: true, num_chains: 1, reward: 1, finished: true });
  });

  it('round-trips through SQLite and an Arrow stream file with the spec types', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'traj-'));
    const store = SqliteStore.open(path.join(dir, 'store.sqlite'));
    (await store.createSession({ sessionId: 's', key: 'k', episodeId: episode.episodeId, attempt: 0, info: {} as never }));
    (await store.commitTurn(turn(0, [1, 2, 3], [10, 11], { temperature: 0.7, logprobsMode: 'processed' })));
    (await store.commitTurn(turn(1, [4], [12], { turnIndex: 1 })));
    (await store.commitTurn(turn(2, [4, 4], [13], { turnIndex: 1, temperature: null, logprobsMode: null }), { rolledBackSeq: 1 }));
    (await store.recordEpisode(episode));
    (await store.recordEpisode({ ...episode, reward: 0 }));
    expect((await store.listEpisodes('b'))).toHaveLength(1);
    const rows = assembleEpisode((await store.listEpisodes('b'))[0]!, (await store.loadTurns('s')));
    const table = tableFromIPC(arrowStreamBytes(rows));
    expect(table.numRows).toBe(1);
    expect(String(table.schema.fields.find((f) => f.name === 'input_ids')!.type)).toBe('List<Int32>');
    expect(String(table.schema.fields.find((f) => f.name === 'loss_mask')!.type)).toBe('List<Uint8>');
    expect(String(table.schema.fields.find((f) => f.name === 'logprobs')!.type)).toBe('List<Float32>');
    expect(Array.from(table.get(0)!.input_ids.toArray())).toEqual([1, 2, 3, 10, 11, 4, 4, 13]);
    expect(table.get(0)!.reward).toBe(0);
    expect(table.get(0)!.num_rollbacks).toBe(1);
    // Exactly as requested (float64), and null for a turn that recorded none.
    expect(String(table.schema.fields.find((f) => f.name === 'turn_temperature')!.type)).toBe('List<Float64>');
    expect(String(table.schema.fields.find((f) => f.name === 'turn_logprobs_mode')!.type)).toBe('List<Utf8>');
    expect(table.get(0)!.turn_temperature.toJSON()).toEqual([0.7, null]);
    expect(table.get(0)!.turn_logprobs_mode.toJSON()).toEqual(['processed', null]);
    store.close();
  });

  it('tags each sampled token with the version that sampled it; min and max span the sampled tokens', () => {
    const turns = [
      turn(0, [1, 2], [10, 11], { version: 4 }),
      // Cut by a pause after two tokens, continued on version 5.
      turn(1, [3], [12, 13, 14], { turnIndex: 1, version: 5, sampledVersions: [4, 4, 5], finishReason: 'abort_resumed' }),
    ];
    const [row] = assembleEpisode(episode, turns);
    expect(row!.token_version).toEqual([-1, -1, 4, 4, -1, 4, 4, 5]);
    expect(row!).toMatchObject({ min_version: 4, max_version: 5 });
    expect(row!.turn_finish_reason).toEqual(['stop', 'abort_resumed']);
  });

  it('opens a store written before per-token versions and keeps the policy state across reopening', async () => {
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'traj-old-')), 'store.sqlite');
    const old = new Database(file);
    // The turns table as stores before per-token versions created it.
    old.exec(`CREATE TABLE turns (session_id TEXT NOT NULL, chain_index INTEGER NOT NULL, seq INTEGER NOT NULL,
      turn_index INTEGER NOT NULL, prompt_delta BLOB NOT NULL, sampled BLOB NOT NULL, logprobs BLOB NOT NULL,
      finish_reason TEXT NOT NULL, cached_tokens INTEGER NOT NULL, version INTEGER NOT NULL, t_llm_s REAL NOT NULL,
      messages_json TEXT NOT NULL, reply_json TEXT NOT NULL, tools_json TEXT, rolled_back INTEGER NOT NULL DEFAULT 0,
      created_at INTEGER NOT NULL, PRIMARY KEY (session_id, chain_index, seq))`);
    old.prepare(
      `INSERT INTO turns VALUES ('s', 0, 0, 0, ?, ?, ?, 'stop', 0, 2, 0.1, '[]', '{}', NULL, 0, 0)`,
    ).run(Buffer.from(new Int32Array([1]).buffer), Buffer.from(new Int32Array([7, 8]).buffer), Buffer.from(new Float32Array([-1, -1]).buffer));
    old.close();

    const store = SqliteStore.open(file);
    expect((await store.loadTurns('s'))[0]!).toMatchObject({ sampledVersions: [2, 2], temperature: null, logprobsMode: null });
    expect((await store.loadPolicy())).toEqual({ version: 0, paused: false });
    await store.resumePolicy(6);
    await store.pausePolicy();
    store.close();
    const reopened = SqliteStore.open(file);
    expect((await reopened.loadPolicy())).toEqual({ version: 6, paused: true });
    (await reopened.commitTurn(turn(1, [2], [9, 9], { sampledVersions: [5, 6], version: 6 })));
    expect((await reopened.loadTurns('s')).map((t) => t.sampledVersions)).toEqual([[2, 2], [5, 6]]);
    reopened.close();
  });
});
