/**
 * What the real-engine comparison reads from a vLLM server's Prometheus text (`GET /metrics`):
 * its prefix-cache and token counters, whose deltas over a run give the engine's own hit rate,
 * and its cache configuration (block size, number of KV blocks). Parsed strictly: a counter or
 * label missing or malformed is an error, never a zero.
 */
import { z } from 'zod';
import { parsePrometheusLabels, parsePrometheusSamples } from '../../scheduler/metrics-scraper.js';

/** vLLM's counters of one engine (one `engine="…"` label), summed if it reports several. */
export interface VllmCounters {
  /** `vllm:prefix_cache_queries_total`: prompt tokens looked up in the prefix cache. */
  prefixQueries: number;
  /** `vllm:prefix_cache_hits_total`: of those, tokens served from it. */
  prefixHits: number;
  /** `vllm:prompt_tokens_total`. */
  promptTokens: number;
  /** `vllm:generation_tokens_total`. */
  generationTokens: number;
  /** `vllm:num_preemptions_total`: requests preempted (their KV freed, recomputed later). */
  preemptions: number;
}

const COUNTERS: Record<keyof VllmCounters, string> = {
  prefixQueries: 'vllm:prefix_cache_queries_total',
  prefixHits: 'vllm:prefix_cache_hits_total',
  promptTokens: 'vllm:prompt_tokens_total',
  generationTokens: 'vllm:generation_tokens_total',
  preemptions: 'vllm:num_preemptions_total',
};

const Value = z.number().finite().nonnegative();
const Count = z.coerce.number().int().positive();

export function readCounters(text: string): VllmCounters {
  const all = parsePrometheusSamples(text);
  const entries = Object.entries(COUNTERS).map(([key, name]) => {
    const found = all.filter((s) => s.name === name);
    if (found.length === 0) throw new Error(`vLLM metrics have no ${name}`);
    return [key, found.reduce((sum, s) => sum + Value.parse(s.value), 0)];
  });
  return Object.fromEntries(entries) as unknown as VllmCounters;
}

/** Counters `after` minus `before`, per key. */
export function counterDelta(before: VllmCounters, after: VllmCounters): VllmCounters {
  const keys = Object.keys(COUNTERS) as (keyof VllmCounters)[];
  return Object.fromEntries(keys.map((k) => [k, after[k] - before[k]])) as unknown as VllmCounters;
}

/** Counters summed over engines. */
export function sumCounters(all: VllmCounters[]): VllmCounters {
  const keys = Object.keys(COUNTERS) as (keyof VllmCounters)[];
  return Object.fromEntries(keys.map((k) => [k, all.reduce((s, c) => s + c[k], 0)])) as unknown as VllmCounters;
}

/** The KV cache's shape from `vllm:cache_config_info`'s labels. */
export interface VllmCacheConfig {
  blockSize: number;
  numGpuBlocks: number;
}

const CacheConfigLabels = z.object({ block_size: Count, num_gpu_blocks: Count });

export function readCacheConfig(text: string): VllmCacheConfig {
  const info = parsePrometheusSamples(text).find((s) => s.name === 'vllm:cache_config_info');
  if (!info) throw new Error('vLLM metrics have no vllm:cache_config_info');
  const parsed = CacheConfigLabels.parse(parsePrometheusLabels(info.labelText));
  return { blockSize: parsed.block_size, numGpuBlocks: parsed.num_gpu_blocks };
}
