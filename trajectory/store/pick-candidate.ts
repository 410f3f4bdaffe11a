import type { AdmissionCandidate } from './types.js';

/**
 * The candidate with the lowest share of its slots in use among those available with a slot
 * free; ties go to the earlier candidate. Shared by both backends, so they choose alike.
 */
export function pickCandidate(candidates: readonly AdmissionCandidate[], running: ReadonlyMap<string, number>): string | undefined {
  let best: { instance: string; share: number } | undefined;
  for (const c of candidates) {
    const n = running.get(c.instance) ?? 0;
    if (!c.available || n >= c.slots) continue;
    const share = n / c.slots;
    if (!best || share < best.share) best = { instance: c.instance, share };
  }
  return best?.instance;
}
