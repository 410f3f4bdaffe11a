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
  /** Where the engine publishes its KV-cache events (scheduler/kv-events/). Default none: the router's estimate only. */
  kvEvents?: KvEventSource;
}

/** An engine's KV-event publisher (vLLM's ZMQ publisher; SGLang's speaks the same format). */
export interface KvEventSource {
  /** `tcp://host:port`; undefined until asked of the engine (`GET /kv_event_sources`). */
  endpoint?: string;
  /** The replay socket, `tcp://host:port`. Default none. */
  replayEndpoint?: string;
  /** Topic prefix. Default `''`. */
  topic?: string;
}
