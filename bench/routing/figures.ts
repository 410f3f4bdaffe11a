/**
 * The small statistics of the real-engine comparison: ranks of policies by hit rate with a tie
 * band, and where two rankings disagree (differences smaller than the band are noise at this
 * workload's size, a few calls' worth of tokens, so they neither order two policies nor count as a
 * disagreement); and the line fit of the step-cost calibration.
 */

/** Competition ranks, highest value first: 1 + how many values exceed this one by more than `band`. */
export function ranksWithTies(values: readonly number[], band: number): number[] {
  return values.map((v) => 1 + values.filter((w) => w > v + band).length);
}

/**
 * Index pairs ordered oppositely by `a` and `b`, each by more than `band`: a real inversion,
 * not a tie read one way on one side.
 */
export function inversions(a: readonly number[], b: readonly number[], band: number): [number, number][] {
  const out: [number, number][] = [];
  for (let i = 0; i < a.length; i++) {
    for (let j = i + 1; j < a.length; j++) {
      const da = a[i]! - a[j]!;
      const db = b[i]! - b[j]!;
      if ((da > band && db < -band) || (da < -band && db > band)) out.push([i, j]);
    }
  }
  return out;
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
