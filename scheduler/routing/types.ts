/**
 * The routing interface shared by the gateway and the simulator (../shared/specs/routing.md):
 * every policy — ours and the baselines — sees the same views and answers the same question,
 * so the benchmark and production run the same code.
 */

/** Chained hash of one block of token ids: it stands for the block and every block before it. */
export type BlockHash = number;

/** Chained hashes of a sequence's full blocks, in order: an array, or a view of a hasher's buffer. */
export type BlockHashes = ArrayLike<BlockHash>;

/** What a policy may know about one engine instance when it decides. */
export interface InstanceView {
  name: string;
  /** KV cache capacity in tokens. */
  kvCapacityTokens: number;
  /** KV tokens in use by running requests (engine metrics where available, else our estimate). */
  kvUsedTokens: number;
  /** Requests sent and not yet finished. */
  inFlightRequests: number;
  /** Prompt + expected output tokens of the requests in flight (load counted in tokens). */
  inFlightTokens: number;
  /** Requests waiting in the engine's queue (engine metrics), 0 when unknown. */
  queuedRequests: number;
  /**
   * Set only when the router admits calls by tokens (routing/kv-gate.ts): the KV tokens reserved
   * on the instance for the working sets of other admitted chains. A view offered with it has
   * room for the call, so a policy need not check memory again.
   */
  kvReservedTokens?: number;
  /** Healthy instances only are offered to policies; kept for completeness of the view. */
  healthy: boolean;
}

/** One model call to place. */
export interface RouteRequest {
  /** The chain (trajectory) the call belongs to: sticky policies bind on it. */
  chainId: string;
  /** Chained block hashes of the prompt, full blocks only. */
  blocks: BlockHashes;
  /** Tokens per block of `blocks`. */
  blockSize: number;
  promptTokens: number;
  /** Output tokens expected (max_tokens or an estimate). */
  expectedOutputTokens: number;
  /** The instance the scheduler admitted the episode to, if any. */
  home?: string;
}

/** Answers how much of a prompt each instance probably holds in its prefix cache. */
export interface PrefixLookup {
  /** Leading blocks of `blocks` that `instance` holds. */
  matchedBlocks(instance: string, blocks: BlockHashes): number;
}

export interface RouteDecision {
  instance: string;
  /** Prompt tokens expected to be served from the instance's cache. */
  expectedCachedTokens: number;
}

/**
 * A routing policy. `route` is called with healthy instances only (at least one) and must return
 * one of them; `onRouted` / `onFinished` let stateful policies (sticky bindings) track calls.
 */
export interface RoutingPolicy {
  readonly name: string;
  route(request: RouteRequest, instances: readonly InstanceView[], prefix: PrefixLookup): RouteDecision;
  onFinished?(request: RouteRequest, instance: string): void;
  /** The instance died: forget bindings to it. */
  onInstanceDown?(instance: string): void;
  /**
   * The chains for which `closed` is true are over (their session closed, their episode ended):
   * policies that count live sessions per instance release them.
   */
  onChainsClosed?(closed: (chainId: string) => boolean): void;
}
