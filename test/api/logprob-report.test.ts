import { describe, expect, it } from 'vitest';
import { InvalidRequestError } from '../../api/errors.js';
import { consistencyFigures, pearson, type RecordedTrajectory } from '../../api/logprob-report.js';

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
});
