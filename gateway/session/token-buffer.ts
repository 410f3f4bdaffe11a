/** Smallest allocation, so short chains do not regrow on every turn. */
const MIN_CAPACITY = 256;
/** Spare room a growth leaves, as a fraction of the tokens held: memory stays near 4 bytes a token. */
const SLACK = 0.125;

/**
 * A chain's token ids: an append-only Uint32Array with bounded slack, truncated only by a rollback.
 * Readers get views (`subarray`), never copies; a view stays valid until the next `truncate` or
 * `append` overwrites or regrows the range it covers.
 */
export class TokenBuffer {
  private data = new Uint32Array(0);
  private size = 0;

  get length(): number {
    return this.size;
  }

  /** The id at `index` (undefined past the end). */
  at(index: number): number | undefined {
    return index >= 0 && index < this.size ? this.data[index] : undefined;
  }

  /** The first `n` ids (all by default), as a view. */
  view(n: number = this.size): Uint32Array {
    return this.data.subarray(0, Math.min(n, this.size));
  }

  /** Ids [from, to) as a view. */
  range(from: number, to: number = this.size): Uint32Array {
    return this.data.subarray(from, Math.min(to, this.size));
  }

  append(ids: ArrayLike<number>): void {
    this.reserve(this.size + ids.length);
    this.data.set(ids, this.size);
    this.size += ids.length;
  }

  /** Drops every id from `n` on (a rolled-back turn). */
  truncate(n: number): void {
    this.size = Math.min(this.size, Math.max(0, n));
  }

  /**
   * The first `base` ids followed by `extra`, without changing what the buffer holds. When `base`
   * is the whole buffer (a continued chain, the usual case) `extra` goes into the spare room and the
   * result is a view; otherwise (a rollback) it is a new array.
   */
  withAppended(base: number, extra: ArrayLike<number>): Uint32Array {
    if (base !== this.size) return joinIds(this.data.subarray(0, base), extra);
    this.reserve(base + extra.length);
    this.data.set(extra, base);
    return this.data.subarray(0, base + extra.length);
  }

  /** Bytes allocated, slack included. */
  get capacityBytes(): number {
    return this.data.byteLength;
  }

  private reserve(needed: number): void {
    if (needed <= this.data.length) return;
    const grown = new Uint32Array(Math.max(MIN_CAPACITY, Math.ceil(needed * (1 + SLACK))));
    grown.set(this.data.subarray(0, this.size));
    this.data = grown;
  }
}

/** `a` followed by `b`, as one new array. */
export function joinIds(a: ArrayLike<number>, b: ArrayLike<number>): Uint32Array {
  const joined = new Uint32Array(a.length + b.length);
  joined.set(a);
  joined.set(b, a.length);
  return joined;
}
