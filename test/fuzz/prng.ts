/** A seeded PRNG (mulberry32): the same seed generates the same requests, so a failure reproduces. */
export class Prng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** Random bytes, as a Buffer (not necessarily UTF-8). */
  bytes(length: number): Buffer {
    const out = Buffer.alloc(length);
    for (let i = 0; i < length; i++) out[i] = Math.floor(this.next() * 256);
    return out;
  }

  /** A short string of awkward characters: quotes, escapes, controls, surrogates, path pieces. */
  awkward(): string {
    const pieces = ['', 'a', '"', '\\', '\u0000', '\n', '..', '/', '%2F', '\ud800', '😀', '<tool_call>', '</think>', '{{', '}}', ' ', 'null', '__proto__', 'constructor'];
    let out = '';
    for (let i = this.int(0, 6); i > 0; i--) out += this.pick(pieces);
    return out;
  }
}
