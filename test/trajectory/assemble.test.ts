import { tableFromIPC } from 'apache-arrow';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { assembleEpisode, TrajectoryStore, writeArrowStream, type EpisodeRecord, type StoredTurn } from '../../trajectory/index.js';

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
  return {
    sessionId: 's',
    chainIndex: 0,
    seq,
    turnIndex: seq,
    promptDelta,
    sampled,
    logprobs: sampled.map((_, i) => -0.25 * (i + 1)),
    finishReason: 'stop',
    cachedTokens: 0,
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
    const store = TrajectoryStore.open(path.join(dir, 'store.sqlite'));
    store.createSession({ sessionId: 's', key: 'k', episodeId: episode.episodeId, attempt: 0, info: {} as never });
    store.commitTurn(turn(0, [1, 2, 3], [10, 11]));
    store.commitTurn(turn(1, [4], [12], { turnIndex: 1 }));
    store.commitTurn(turn(2, [4, 4], [13], { turnIndex: 1 }), 1);
    store.recordEpisode(episode);
    store.recordEpisode({ ...episode, reward: 0 });
    expect(store.listEpisodes('b')).toHaveLength(1);
    const rows = assembleEpisode(store.listEpisodes('b')[0]!, store.loadTurns('s'));
    const file = await writeArrowStream(path.join(dir, 'part.arrow'), rows);
    const table = tableFromIPC(readFileSync(new URL(file.uri)));
    expect(table.numRows).toBe(1);
    expect(String(table.schema.fields.find((f) => f.name === 'input_ids')!.type)).toBe('List<Int32>');
    expect(String(table.schema.fields.find((f) => f.name === 'loss_mask')!.type)).toBe('List<Uint8>');
    expect(String(table.schema.fields.find((f) => f.name === 'logprobs')!.type)).toBe('List<Float32>');
    expect(Array.from(table.get(0)!.input_ids.toArray())).toEqual([1, 2, 3, 10, 11, 4, 4, 13]);
    expect(table.get(0)!.reward).toBe(0);
    expect(table.get(0)!.num_rollbacks).toBe(1);
    store.close();
  });
});
