/**
 * A bounded map from pre-token to ids in two generations: lookups promote from the old one, and
 * when the young one is full it becomes the old one (the previous old one is dropped). O(1)
 * amortised, and what is used keeps surviving.
 */
export class PieceCache {
  private young = new Map<string, readonly number[]>();
  private old = new Map<string, readonly number[]>();
  private readonly generation: number;

  /** `maxEntries`: at most this many pieces are held (half per generation). */
  constructor(maxEntries: number) {
    this.generation = Math.max(1, Math.floor(maxEntries / 2));
  }

  get size(): number {
    return this.young.size + this.old.size;
  }

  get(piece: string): readonly number[] | undefined {
    const ids = this.young.get(piece);
    if (ids !== undefined) return ids;
    const older = this.old.get(piece);
    if (older !== undefined) this.set(piece, older);
    return older;
  }

  set(piece: string, ids: readonly number[]): void {
    if (this.young.size >= this.generation) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(piece, ids);
  }
}
