/** A rollout instance (one inference engine) the scheduler can place episodes on. */
export interface InstanceConfig {
  /** Unique name, used in sessions and metrics. */
  name: string;
  /** Engine API. */
  kind: 'vllm' | 'sglang';
  /** Base URL, e.g. `http://127.0.0.1:8000`. */
  url: string;
  /** KV cache capacity in tokens. */
  kvCapacityTokens: number;
}
