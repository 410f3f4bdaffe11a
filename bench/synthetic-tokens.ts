/** A deterministic stream of `count` token ids over a Qwen-sized vocabulary (xorshift from `seed`). */
export function syntheticTokens(seed: number, count: number): number[] {
  let x = seed * 2_654_435_761 + 1;
  return Array.from({ length: count }, () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % 151_936;
  });
}
