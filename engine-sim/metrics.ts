import type { EngineStats } from './engine.js';

export interface MetricsInput {
  modelName: string;
  stats: EngineStats;
  blockSize: number;
  numBlocks: number;
  /** Finished requests by vLLM's `finished_reason` label value. */
  finishedByReason: Record<'stop' | 'length' | 'abort', number>;
}

/**
 * Prometheus text in vLLM's (V1 engine) names and labels, then SGLang's, since the simulator speaks
 * both APIs. Counters carry `_total` on the wire, as `prometheus_client` writes them.
 */
export function renderMetrics({
  modelName,
  stats,
  blockSize,
  numBlocks,
  finishedByReason,
}: MetricsInput): string {
  const labels = `model_name="${escapeLabel(modelName)}",engine="0"`;
  const usage = stats.kvCapacityTokens === 0 ? 0 : stats.kvUsedTokens / stats.kvCapacityTokens;
  const lines: string[] = [];
  const metric = (
    name: string,
    type: 'gauge' | 'counter',
    help: string,
    samples: [string, number][],
    sampleLabels = labels,
  ) => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [extra, value] of samples) lines.push(`${name}{${sampleLabels}${extra}} ${value}`);
  };
  metric('vllm:num_requests_running', 'gauge', 'Number of requests in model execution batches.', [
    ['', stats.running],
  ]);
  metric('vllm:num_requests_waiting', 'gauge', 'Number of requests waiting to be processed.', [
    ['', stats.waiting],
  ]);
  metric('vllm:kv_cache_usage_perc', 'gauge', 'KV-cache usage. 1 means 100 percent usage.', [
    ['', usage],
  ]);
  // The pre-V1 name, still read by some routers and dashboards.
  metric('vllm:gpu_cache_usage_perc', 'gauge', 'GPU KV-cache usage. 1 means 100 percent usage.', [
    ['', usage],
  ]);
  metric(
    'vllm:prefix_cache_queries_total',
    'counter',
    'Prefix cache queries, in terms of number of queried tokens.',
    [['', stats.promptTokens]],
  );
  metric(
    'vllm:prefix_cache_hits_total',
    'counter',
    'Prefix cache hits, in terms of number of cached tokens.',
    [['', stats.cachedTokens]],
  );
  metric('vllm:prompt_tokens_total', 'counter', 'Number of prefill tokens processed.', [
    ['', stats.promptTokens],
  ]);
  metric('vllm:generation_tokens_total', 'counter', 'Number of generation tokens processed.', [
    ['', stats.generatedTokens],
  ]);
  metric(
    'vllm:request_success_total',
    'counter',
    'Count of successfully processed requests.',
    Object.entries(finishedByReason).map(([reason, n]) => [`,finished_reason="${reason}"`, n]),
  );
  // Lets a router learn the engine's KV capacity without configuration.
  metric('vllm:cache_config_info', 'gauge', 'Information of the LLMEngine CacheConfig', [
    [`,block_size="${blockSize}",num_gpu_blocks="${numBlocks}",enable_prefix_caching="True"`, 1],
  ]);

  const sglang = `model_name="${escapeLabel(modelName)}"`;
  metric(
    'sglang:num_running_reqs',
    'gauge',
    'The number of running requests.',
    [['', stats.running]],
    sglang,
  );
  metric(
    'sglang:num_queue_reqs',
    'gauge',
    'The number of requests in the waiting queue.',
    [['', stats.waiting]],
    sglang,
  );
  metric('sglang:token_usage', 'gauge', 'The token usage.', [['', usage]], sglang);
  // SGLang reports a recent window; the simulator's rate is over its lifetime.
  const hitRate = stats.promptTokens === 0 ? 0 : stats.cachedTokens / stats.promptTokens;
  metric('sglang:cache_hit_rate', 'gauge', 'The prefix cache hit rate.', [['', hitRate]], sglang);
  metric(
    'sglang:prompt_tokens_total',
    'counter',
    'Number of prefill tokens processed.',
    [['', stats.promptTokens]],
    sglang,
  );
  metric(
    'sglang:generation_tokens_total',
    'counter',
    'Number of generation tokens processed.',
    [['', stats.generatedTokens]],
    sglang,
  );
  return `${lines.join('\n')}\n`;
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}
