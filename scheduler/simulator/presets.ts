/** Engine cost models of the spec: step time `c0 + a·(uncached prefill tokens) + b·(context tokens in batch)`. */
export interface ModelPreset {
  name: string;
  /** Fixed cost of one engine step, seconds. */
  c0: number;
  /** Seconds per prefilled (uncached) prompt token. */
  a: number;
  /** Seconds per context token of the requests in the batch, per step (attention over the KV). */
  b: number;
  /** KV cache capacity of one instance, tokens. */
  kvCapacityTokens: number;
}

export const PRESETS: Readonly<Record<'8b' | '32b', ModelPreset>> = {
  '8b': { name: '8B', c0: 0.006, a: 1 / 35_000, b: 39e-9, kvCapacityTokens: 400_000 },
  '32b': { name: '32B', c0: 0.011, a: 1 / 9_000, b: 78e-9, kvCapacityTokens: 130_000 },
};
