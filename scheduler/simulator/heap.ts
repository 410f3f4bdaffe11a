/** A binary min-heap keyed by (time, insertion sequence), so simultaneous events keep their order. */
export class EventHeap<T> {
  private readonly times: number[] = [];
  private readonly seqs: number[] = [];
  private readonly items: T[] = [];
  private seq = 0;

  get size(): number {
    return this.items.length;
  }

  push(time: number, item: T): void {
    this.times.push(time);
    this.seqs.push(this.seq++);
    this.items.push(item);
    this.up(this.items.length - 1);
  }

  peekTime(): number {
    return this.times[0] ?? Infinity;
  }

  /** Removes and returns the earliest event (undefined when empty). */
  pop(): { time: number; item: T } | undefined {
    if (this.items.length === 0) return undefined;
    const out = { time: this.times[0]!, item: this.items[0]! };
    const last = this.items.length - 1;
    this.swap(0, last);
    this.times.pop();
    this.seqs.pop();
    this.items.pop();
    this.down(0);
    return out;
  }

  private less(i: number, j: number): boolean {
    return this.times[i]! < this.times[j]! || (this.times[i] === this.times[j] && this.seqs[i]! < this.seqs[j]!);
  }

  private swap(i: number, j: number): void {
    [this.times[i], this.times[j]] = [this.times[j]!, this.times[i]!];
    [this.seqs[i], this.seqs[j]] = [this.seqs[j]!, this.seqs[i]!];
    [this.items[i], this.items[j]] = [this.items[j]!, this.items[i]!];
  }

  private up(i: number): void {
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(i, p)) return;
      this.swap(i, p);
      i = p;
    }
  }

  private down(i: number): void {
    const n = this.items.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && this.less(l, m)) m = l;
      if (r < n && this.less(r, m)) m = r;
      if (m === i) return;
      this.swap(i, m);
      i = m;
    }
  }
}
