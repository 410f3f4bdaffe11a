/**
 * The small statistics of the real-engine comparison: ranks of policies by hit rate with a tie
 * band, and where two rankings disagree (differences within the band are noise: they neither
 * order two policies nor count as a disagreement); the band of a pair from the spread of repeated
 * runs; and the line fit of the step-cost calibration.
 */

/** The tie band of the pair (i, j): one number for every pair, or one per pair. */
export type Band = number | ((i: number, j: number) => number);

const bandOf = (band: Band, i: number, j: number): number => (typeof band === 'number' ? band : band(i, j));

/** Competition ranks, highest value first: 1 + how many values exceed this one by more than their pair's band. */
export function ranksWithTies(values: readonly number[], band: Band): number[] {
  return values.map((v, i) => 1 + values.filter((w, j) => w > v + bandOf(band, i, j)).length);
}

/** One index pair (i < j): how `a` and `b` order it (`da`, `db`: i's value minus j's) and its band. */
interface PairDifference {
  i: number;
  j: number;
  da: number;
  db: number;
  band: number;
}

/** Every index pair i < j of two equally long value lists, with their differences and band. */
function* pairDifferences(a: readonly number[], b: readonly number[], band: Band): Generator<PairDifference> {
  for (let i = 0; i < a.length; i++) {
    for (let j = i + 1; j < a.length; j++) yield { i, j, da: a[i]! - a[j]!, db: b[i]! - b[j]!, band: bandOf(band, i, j) };
  }
}

/**
 * Index pairs ordered oppositely by `a` and `b`, each by more than the pair's band: a real
 * inversion, not a tie read one way on one side.
 */
export function inversions(a: readonly number[], b: readonly number[], band: Band): [number, number][] {
  const out: [number, number][] = [];
  for (const { i, j, da, db, band: w } of pairDifferences(a, b, band)) {
    if ((da > w && db < -w) || (da < -w && db > w)) out.push([i, j]);
  }
  return out;
}

/**
 * Of the pairs `a` orders by more than their band (the pairs the reference tells apart), how many
 * `b` orders the same way, and how many of those also by more than the band.
 */
export function agreement(a: readonly number[], b: readonly number[], band: Band): { resolved: number; same: number; sameBeyondBand: number } {
  let resolved = 0;
  let same = 0;
  let sameBeyondBand = 0;
  for (const { da, db, band: w } of pairDifferences(a, b, band)) {
    if (Math.abs(da) <= w) continue;
    resolved++;
    const along = Math.sign(da) * db;
    if (along > 0) same++;
    if (along > w) sameBeyondBand++;
  }
  return { resolved, same, sameBeyondBand };
}

/**
 * Index pairs `a` does not tell apart (within the pair's band) and `b` does (beyond it): where
 * `b`'s ranks with ties differ from `a`'s without `b` ordering any pair of `a`'s otherwise.
 */
export function separatedOnlyBy(a: readonly number[], b: readonly number[], band: Band): [number, number][] {
  const out: [number, number][] = [];
  for (const { i, j, da, db, band: w } of pairDifferences(a, b, band)) {
    if (Math.abs(da) <= w && Math.abs(db) > w) out.push([i, j]);
  }
  return out;
}

/** Mean and sample standard deviation (0 for a single value). */
export function meanAndSd(xs: readonly number[]): { mean: number; sd: number } {
  if (xs.length === 0) throw new Error('no values');
  const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
  const sd = xs.length > 1 ? Math.sqrt(xs.reduce((s, x) => s + (x - mean) ** 2, 0) / (xs.length - 1)) : 0;
  return { mean, sd };
}

/**
 * The band within which two means of `runs` runs each are not told apart: twice the standard
 * error of their difference (from each one's run-to-run standard deviation), at least `floor`.
 */
export function spreadBand(sdA: number, sdB: number, runs: number, floor: number): number {
  return Math.max(floor, 2 * Math.sqrt((sdA * sdA + sdB * sdB) / runs));
}

/** The least-squares line through the points: `y ≈ intercept + slope·x`. */
export function fitLine(xs: readonly number[], ys: readonly number[]): { intercept: number; slope: number } {
  const n = xs.length;
  if (n < 2 || ys.length !== n) throw new Error(`a line needs two or more points (${n} x, ${ys.length} y)`);
  const mx = xs.reduce((s, x) => s + x, 0) / n;
  const my = ys.reduce((s, y) => s + y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i]! - mx) * (ys[i]! - my);
    sxx += (xs[i]! - mx) ** 2;
  }
  if (sxx === 0) throw new Error('a line needs two distinct x');
  const slope = sxy / sxx;
  return { intercept: my - slope * mx, slope };
}
