/** A uniform draw in [0, 1). */
export type Rng = () => number;

/**
 * mulberry32: a tiny 32-bit generator. Statistically weak but fast and reproducible, which is all
 * a simulator's "sampling" needs.
 */
export function createRng(seed: number): Rng {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Mixes several integers into one 32-bit seed, so (engine seed, request number) pairs differ. */
export function mixSeed(...parts: number[]): number {
  let h = 0x811c9dc5;
  for (const part of parts) {
    // Split into 32-bit halves so seeds above 2^32 (e.g. a request's 64-bit `seed`) still matter.
    for (const word of [part >>> 0, Math.floor(part / 4294967296) >>> 0]) {
      h = Math.imul(h ^ word, 0x01000193);
      h ^= h >>> 13;
      h = Math.imul(h, 0x5bd1e995);
      h ^= h >>> 15;
    }
  }
  return h >>> 0;
}
