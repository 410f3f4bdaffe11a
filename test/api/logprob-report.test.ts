import { describe, expect, it } from 'vitest';
import { InvalidRequestError } from '../../api/errors.js';
import { tableFromIPC } from 'apache-arrow';
import { consistencyFigures, pearson, type RecordedTrajectory } from '../../api/logprob-report.js';
import { recordedTrajectories } from '../../api/recorded-rows.js';
import { arrowStreamBytes, assembleEpisode, type StoredTurn } from '../../trajectory/index.js';

describe('log-prob consistency figures', () => {
  it('computes Pearson correlation', () => {
    expect(pearson([1, 2, 3], [2, 4, 6])).toBeCloseTo(1, 12);
    expect(pearson([1, 2, 3], [3, 2, 1])).toBeCloseTo(-1, 12);
    // Hand-computed: cov 1.0, var 1.25 each -> 0.8.
    expect(pearson([1, 2, 3, 4], [1, 3, 2, 4])).toBeCloseTo(0.8, 12);
    expect(pearson([1], [1])).toBeNull();
    expect(pearson([1, 1], [0, 2])).toBeNull();
  });

  const row: RecordedTrajectory = {
    trajectoryId: 't0',
    promptLength: 2,
    // Positions 2, 3 and 5 were sampled; 4 is a tool result inside the response.
    sampledMask: [0, 0, 1, 1, 0, 1],
    logprobs: [0, 0, Math.log(0.5), Math.log(0.25), 0, Math.log(0.8)],
    turnStarts: [2, 5],
    turnTemperature: [1, 1],
    turnLogprobsMode: ['raw', 'raw'],
  };
  const recorded = new Map([['t0', row]]);

  it('compares probabilities on sampled tokens only, in either layout', () => {
    const trainer = [Math.log(0.4), Math.log(0.25), -9, Math.log(0.6)];
    const response = consistencyFigures(recorded, [{ trajectory_id: 't0', layout: 'response', logprobs: trainer }], 5);
    const sequence = consistencyFigures(recorded, [{ trajectory_id: 't0', layout: 'sequence', logprobs: [-7, -7, ...trainer] }], 5);
    expect(response.tokens).toBe(3);
    expect(response.mean_abs_prob_diff).toBeCloseTo((0.1 + 0 + 0.2) / 3, 12);
    expect(response.max_abs_prob_diff).toBeCloseTo(0.2, 12);
    // Sample standard deviation of [0.1, 0, 0.2].
    expect(response.std_abs_prob_diff).toBeCloseTo(0.1, 12);
    expect(response.pearson).toBeCloseTo(pearson([0.5, 0.25, 0.8], [0.4, 0.25, 0.6])!, 12);
    expect(sequence).toEqual(response);
  });

  it('rejects a wrong length and a trajectory given twice', () => {
    expect(() => consistencyFigures(recorded, [{ trajectory_id: 't0', layout: 'response', logprobs: [0, 0] }], 5)).toThrow(InvalidRequestError);
    const entry = { trajectory_id: 't0', layout: 'response' as const, logprobs: [0, 0, 0, 0] };
    expect(() => consistencyFigures(recorded, [entry, entry], 5)).toThrow(/twice/);
  });

  // Turn 0 (positions 2-3) sampled at 0.7, turn 1 (position 5) at 1; both raw.
  const mixed = new Map([['t0', { ...row, turnTemperature: [0.7, 1] }]]);
  const trainer = [{ trajectory_id: 't0', layout: 'response' as const, logprobs: [Math.log(0.4), Math.log(0.25), -9, Math.log(0.6)] }];

  it('compares only the tokens recorded at the stated temperature, and reports each other group apart', () => {
    const at07 = consistencyFigures(mixed, trainer, 5, { temperature: 0.7, logprobs_mode: 'raw' });
    expect(at07.compared).toEqual({ temperature: 0.7, logprobs_mode: 'raw' });
    expect(at07.tokens).toBe(2);
    expect(at07.mean_abs_prob_diff).toBeCloseTo((0.1 + 0) / 2, 12);
    expect(at07.worst).toEqual([{ trajectory_id: 't0', tokens: 2, mean_abs_prob_diff: at07.mean_abs_prob_diff, max_abs_prob_diff: at07.max_abs_prob_diff }]);
    expect(at07.groups.map((g) => [g.temperature, g.logprobs_mode, g.compared, g.tokens])).toEqual([
      [0.7, 'raw', true, 2],
      [1, 'raw', false, 1],
    ]);
    const at1 = consistencyFigures(mixed, trainer, 5, { temperature: 1 });
    expect(at1.compared).toEqual({ temperature: 1, logprobs_mode: 'raw' });
    expect(at1.tokens).toBe(1);
    expect(at1.max_abs_prob_diff).toBeCloseTo(0.2, 12);
  });

  it('defaults to the one recorded temperature and mode, so a body that states none reads as before', () => {
    const figures = consistencyFigures(recorded, trainer, 5);
    expect(figures.compared).toEqual({ temperature: 1, logprobs_mode: 'raw' });
    expect(figures.tokens).toBe(3);
    // Rows exported before turns recorded them compare as one unrecorded group.
    const old = consistencyFigures(new Map([['t0', { ...row, turnTemperature: [], turnLogprobsMode: [] }]]), trainer, 5);
    expect(old.compared).toEqual({ temperature: null, logprobs_mode: null });
    expect(old.tokens).toBe(3);
  });

  it('refuses, naming the values, a statement that leaves several temperatures open or matches no token', () => {
    expect(() => consistencyFigures(mixed, trainer, 5)).toThrow(/several temperatures \(0\.7, 1\): state `temperature`/);
    expect(() => consistencyFigures(recorded, trainer, 5, { logprobs_mode: 'processed' })).toThrow(
      'no sampled token was recorded at temperature any with processed log-probs; the trajectories hold temperature 1 with raw log-probs',
    );
    expect(() => consistencyFigures(recorded, trainer, 5, { temperature: 0.7 })).toThrow(InvalidRequestError);
    // Both stated, matching no group: the error names both and what was recorded.
    const both = new Map([['t0', { ...row, turnTemperature: [0.7, 0.7], turnLogprobsMode: ['processed', 'raw'] }]]);
    expect(() => consistencyFigures(both, trainer, 5, { temperature: 1, logprobs_mode: 'raw' })).toThrow(
      'no sampled token was recorded at temperature 1 with raw log-probs; the trajectories hold temperature 0.7 with processed log-probs; temperature 0.7 with raw log-probs',
    );
    // Temperature alone leaves two modes open here.
    expect(() => consistencyFigures(both, trainer, 5, { temperature: 0.7 })).toThrow(/several log-prob modes \(processed, raw\)/);
  });

  it('reads each turn’s temperature and mode from the Arrow rows, an unrecorded turn as its own group', () => {
    const stored = (seq: number, sampled: number[], temperature: number | null, logprobsMode: StoredTurn['logprobsMode']): StoredTurn => ({
      sessionId: 's', chainIndex: 0, seq, turnIndex: seq, promptDelta: [1, 2], sampled, logprobs: sampled.map(() => -0.5),
      finishReason: 'stop', cachedTokens: 0, temperature, logprobsMode, version: 0, sampledVersions: sampled.map(() => 0),
      tLlmS: 0, messagesJson: '[]', replyJson: '{"role":"assistant","content":""}', toolsJson: null, rolledBack: false,
    });
    const episode = { episodeId: 'e', batchId: 'b', taskId: 't', groupId: 'b.g0', episodeIndex: 0, agentName: 'a', sessionId: 's', outcome: 'ok' as const, terminationReason: 'stop', reward: 1, rewardInfo: {}, numTurns: 2, numToolCalls: 0, tEpisodeS: 1, tEnvS: 0 };
    const rows = assembleEpisode(episode, [stored(0, [7, 8], 0.7, 'processed'), stored(1, [9], null, null)]);
    const batches = tableFromIPC(arrowStreamBytes(rows)).batches;
    const id = rows[0]!.trajectory_id;
    const found = recordedTrajectories(batches, new Set([id]));
    // Exactly representable in float32. Response layout: [7, 8] sampled, then turn 1's prompt [1, 2], then [9] sampled.
    const figures = consistencyFigures(found, [{ trajectory_id: id, layout: 'response', logprobs: [-0.5, -0.5, 0, 0, -2] }], 5, { temperature: 0.7 });
    expect(figures).toMatchObject({ compared: { temperature: 0.7, logprobs_mode: 'processed' }, tokens: 2, max_abs_prob_diff: 0 });
    expect(figures.groups.map((g) => [g.temperature, g.logprobs_mode, g.tokens])).toEqual([
      [0.7, 'processed', 2],
      [null, null, 1],
    ]);
  });
});
