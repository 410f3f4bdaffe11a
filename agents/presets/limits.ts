/** Context limits the presets derive from the session's `limits.maxContextTokens`. */

/**
 * The share of the context window at which an agent compacts its history: early enough that the
 * summary request itself still fits under the gateway's budget.
 */
const COMPACT_AT = 0.9;

/** Prompt tokens at which an agent should compact, for a window of `maxContextTokens`. */
export function compactionTokenLimit(maxContextTokens: number): number {
  return Math.floor(maxContextTokens * COMPACT_AT);
}
