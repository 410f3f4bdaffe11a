import { InvalidRequestError } from './errors.js';

/** What log-probs a turn's tokens hold: the temperature it was sampled at and the engine's log-prob mode (null: not recorded). */
export interface SamplingKey {
  temperature: number | null;
  logprobs_mode: string | null;
}

/** What the rollout recorded of one trajectory, as its Arrow row has it. */
export interface RecordedTrajectory {
  trajectoryId: string;
  promptLength: number;
  /** 1 where the policy sampled the token; only those tokens carry a rollout log-prob. */
  sampledMask: ArrayLike<number>;
  logprobs: ArrayLike<number>;
  /** Offset of each model turn in the row. */
  turnStarts: ArrayLike<number>;
  /** Each turn's sampling temperature and log-prob mode, null where the row recorded none. */
  turnTemperature: ArrayLike<number | null>;
  turnLogprobsMode: ArrayLike<string | null>;
}

/** The trainer's recomputed log-probs of one trajectory. */
export interface TrainerLogprobs {
  trajectory_id: string;
  logprobs: number[];
  /** `response`: one per token of input_ids[prompt_length:]; `sequence`: one per token of input_ids. */
  layout: 'response' | 'sequence';
}

/** What the trainer says it recomputed at; an unstated key means "what the rollout recorded", which must then be one value. */
export interface TrainerSampling {
  temperature?: number;
  logprobs_mode?: 'raw' | 'processed';
}

export interface TrajectoryDiff {
  trajectory_id: string;
  tokens: number;
  mean_abs_prob_diff: number;
  max_abs_prob_diff: number;
}

/** The figures verl reports for training-inference mismatch, over a set of sampled tokens. */
export interface Figures {
  trajectories: number;
  tokens: number;
  pearson: number | null;
  mean_abs_prob_diff: number;
  max_abs_prob_diff: number;
  std_abs_prob_diff: number;
}

/** The figures of the tokens recorded at one temperature and log-prob mode. */
export type GroupFigures = SamplingKey & Figures & { compared: boolean };

/**
 * The figures of the tokens recorded at the temperature and mode compared, the worst trajectories
 * among them, and every (temperature, mode) group of the given tokens with its own figures.
 */
export interface ConsistencyFigures extends Figures {
  compared: SamplingKey;
  worst: TrajectoryDiff[];
  groups: GroupFigures[];
}

/** The trainer's statement matches no recorded tokens, or leaves open which of several it meant. */
export class SamplingMismatchError extends InvalidRequestError {
  override name = 'SamplingMismatchError';
}

/** Pearson correlation; null when it is undefined (under two points, or a constant series). */
export function pearson(x: readonly number[], y: readonly number[]): number | null {
  const n = x.length;
  if (n < 2) return null;
  let mx = 0;
  let my = 0;
  for (let i = 0; i < n; i++) {
    mx += x[i]!;
    my += y[i]!;
  }
  mx /= n;
  my /= n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    const dx = x[i]! - mx;
    const dy = y[i]! - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  return sxx === 0 || syy === 0 ? null : sxy / Math.sqrt(sxx * syy);
}

const describeKey = (k: SamplingKey) => `temperature ${k.temperature ?? 'unrecorded'} with ${k.logprobs_mode ?? 'unrecorded'} log-probs`;
const keyId = (k: SamplingKey) => JSON.stringify([k.temperature, k.logprobs_mode]);

/** Sampled tokens of one (temperature, mode) group: probabilities and, per trajectory, the diffs. */
interface Group {
  key: SamplingKey;
  rollout: number[];
  trainer: number[];
  perTrajectory: Map<string, { tokens: number; sum: number; max: number }>;
}

function figuresOf(group: Group): Figures {
  const diffs = group.rollout.map((p, i) => Math.abs(p - group.trainer[i]!));
  const mean = diffs.length ? diffs.reduce((a, b) => a + b, 0) / diffs.length : 0;
  const variance = diffs.length > 1 ? diffs.reduce((a, d) => a + (d - mean) ** 2, 0) / (diffs.length - 1) : 0;
  return {
    trajectories: group.perTrajectory.size,
    tokens: diffs.length,
    pearson: pearson(group.rollout, group.trainer),
    mean_abs_prob_diff: mean,
    max_abs_prob_diff: diffs.reduce((a, b) => Math.max(a, b), 0),
    std_abs_prob_diff: Math.sqrt(variance),
  };
}

/** The value the trainer compared at: the one it stated, or the only one recorded. */
function comparedValue<T>(stated: T | undefined, recorded: readonly SamplingKey[], field: keyof SamplingKey, name: string): T | null {
  if (stated !== undefined) return stated;
  const values = [...new Set(recorded.map((k) => k[field]))];
  if (values.length > 1) {
    throw new SamplingMismatchError(`the trajectories hold tokens at several ${name}s (${values.map((v) => v ?? 'unrecorded').join(', ')}): state \`${field}\` to say which the trainer recomputed at`);
  }
  return (values[0] ?? null) as T | null;
}

/**
 * Compares rollout and trainer token probabilities (exp of the log-probs) on the sampled tokens, as
 * verl's rollout/actor debug metrics do: Pearson correlation of the probabilities, and the mean,
 * max and (sample) standard deviation of their absolute difference, token-weighted; plus the `topK`
 * trajectories with the largest mean absolute difference. Like is compared with like: the
 * headline figures cover only tokens recorded at the temperature and log-prob mode the trainer
 * recomputed at; every other (temperature, mode) group is reported beside them, never mixed in.
 */
export function consistencyFigures(
  recorded: ReadonlyMap<string, RecordedTrajectory>,
  given: readonly TrainerLogprobs[],
  topK: number,
  stated: TrainerSampling = {},
): ConsistencyFigures {
  const groups = new Map<string, Group>();
  const seen = new Set<string>();
  for (const entry of given) {
    if (seen.has(entry.trajectory_id)) throw new InvalidRequestError(`trajectory ${entry.trajectory_id} is given twice`);
    seen.add(entry.trajectory_id);
    const row = recorded.get(entry.trajectory_id);
    if (!row) throw new InvalidRequestError(`trajectory ${entry.trajectory_id} is not a row of the batch`);
    const length = row.sampledMask.length;
    const offset = entry.layout === 'response' ? row.promptLength : 0;
    if (entry.logprobs.length !== length - offset) {
      throw new InvalidRequestError(`trajectory ${entry.trajectory_id}: ${entry.layout} layout needs ${length - offset} log-probs, got ${entry.logprobs.length}`);
    }
    let turn = -1;
    for (let position = offset; position < length; position++) {
      while (turn + 1 < row.turnStarts.length && row.turnStarts[turn + 1]! <= position) turn++;
      if (row.sampledMask[position] !== 1) continue;
      const key: SamplingKey = { temperature: row.turnTemperature[turn] ?? null, logprobs_mode: row.turnLogprobsMode[turn] ?? null };
      const id = keyId(key);
      let group = groups.get(id);
      if (!group) groups.set(id, (group = { key, rollout: [], trainer: [], perTrajectory: new Map() }));
      const p = Math.exp(row.logprobs[position]!);
      const q = Math.exp(entry.logprobs[position - offset]!);
      const diff = Math.abs(p - q);
      group.rollout.push(p);
      group.trainer.push(q);
      const t = group.perTrajectory.get(entry.trajectory_id) ?? { tokens: 0, sum: 0, max: 0 };
      t.tokens += 1;
      t.sum += diff;
      t.max = Math.max(t.max, diff);
      group.perTrajectory.set(entry.trajectory_id, t);
    }
  }
  const keys = [...groups.values()].map((g) => g.key);
  // An unstated value is taken from the groups the stated one leaves, so `temperature` alone picks its group.
  const candidates = keys.filter(
    (k) => (stated.temperature === undefined || k.temperature === stated.temperature) && (stated.logprobs_mode === undefined || k.logprobs_mode === stated.logprobs_mode),
  );
  const compared: SamplingKey = {
    temperature: comparedValue(stated.temperature, candidates, 'temperature', 'temperature'),
    logprobs_mode: comparedValue(stated.logprobs_mode, candidates, 'logprobs_mode', 'log-prob mode'),
  };
  const match = groups.get(keyId(compared));
  if (keys.length > 0 && !match) {
    const asked = `temperature ${stated.temperature ?? 'any'} with ${stated.logprobs_mode ?? 'any'} log-probs`;
    throw new SamplingMismatchError(`no sampled token was recorded at ${asked}; the trajectories hold ${keys.map(describeKey).join('; ')}`);
  }
  const chosen: Group = match ?? { key: compared, rollout: [], trainer: [], perTrajectory: new Map() };
  const worst = [...chosen.perTrajectory.entries()]
    .map(([trajectory_id, t]) => ({ trajectory_id, tokens: t.tokens, mean_abs_prob_diff: t.sum / t.tokens, max_abs_prob_diff: t.max }))
    .sort((a, b) => b.mean_abs_prob_diff - a.mean_abs_prob_diff || a.trajectory_id.localeCompare(b.trajectory_id))
    .slice(0, topK);
  return {
    compared,
    ...figuresOf(chosen),
    worst,
    groups: [...groups.values()].map((g) => ({ ...g.key, compared: g === match, ...figuresOf(g) })),
  };
}
