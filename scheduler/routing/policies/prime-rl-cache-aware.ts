import { SglangCacheAwarePolicy } from './sglang-cache-aware.js';

/**
 * Thresholds of `cache_aware` as prime-rl runs it: prime-rl launches the router of its fork
 * (PrimeIntellect-ai/router) and leaves the knobs to the router's defaults (PR #3255), which its
 * launcher sets in `py_src/vllm_router/router_args.py` (read at 3d7982b08e5a): 0.3 / 64 / 1.5.
 */
export interface PrimeRlCacheAwareOptions {
  /** Matched fraction of the prompt above which the best-matching instance is taken. Default 0.3. */
  cacheThreshold?: number;
  /** Load gap (in-flight requests, max − min) above which the system counts as imbalanced. Default 64. */
  balanceAbsThreshold?: number;
  /** Load ratio (max / min) above which the system counts as imbalanced. Default 1.5. */
  balanceRelThreshold?: number;
}

/**
 * prime-rl's `cache_aware`: the vllm-router policy prime-rl launches when its
 * `[inference.router] policy = "cache_aware"`, read in its fork PrimeIntellect-ai/router
 * `src/policies/cache_aware.rs` at commit 4c662942d5f4. (PrimeIntellect-ai/prime-rl PR #3255 proposed
 * moving the default from `consistent_hash` to `cache_aware`, but its thread is closed unmerged; the default
 * prime-rl adopted later, PR #3563, is `sticky_least_loaded` — see skyrl-sticky-least-loaded.ts.)
 *
 * - loads are requests in flight per worker; when both `max − min > balanceAbsThreshold` and
 *   `max > balanceRelThreshold · min`, the call goes to the least loaded worker;
 * - otherwise, when the worker with the longest matched prefix covers more than `cacheThreshold` of
 *   the prompt, the call goes there;
 * - otherwise to the least loaded worker (this fork's low-match branch: upstream SGLang's goes to
 *   the smallest tree).
 *
 * The rule is SGLang's cache-aware one (sglang-cache-aware.ts: the fork keeps it) with these
 * thresholds. Ties go to the earliest instance (Rust's `min_by_key`). The router's approximate
 * radix tree over request text, fed by its own decisions, is our prefix index over token blocks.
 */
export class PrimeRlCacheAwarePolicy extends SglangCacheAwarePolicy {
  override readonly name = 'prime-rl-cache-aware';

  constructor(options: PrimeRlCacheAwareOptions = {}) {
    super({ cacheThreshold: 0.3, balanceAbsThreshold: 64, balanceRelThreshold: 1.5, ...options });
  }
}
