/** A rollout instance (one inference engine) the scheduler can place episodes on. */
export interface InstanceConfig {
  /** Unique name, used in sessions and metrics. */
  name: string;
  /** Engine API. */
  kind: 'vllm' | 'sglang';
  /** Base URL, e.g. `http://127.0.0.1:8000`. */
  url: string;
  /**
   * KV cache capacity in tokens. Default: what the engine reports at start-up (`stack/engine-check.ts`),
   * else unbounded (admission and routing then never hold work back for memory).
   */
  kvCapacityTokens?: number;
}
