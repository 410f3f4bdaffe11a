import { describe, expect, it } from 'vitest';
import { agreement, fitLine, inversions, meanAndSd, ranksWithTies, separatedOnlyBy, spreadBand } from '../../bench/routing/figures.js';
import { counterDelta, readCacheConfig, readCounters, sumCounters } from '../../bench/routing/vllm-metrics.js';

const METRICS = (hits: number, queries: number) => `# HELP vllm:prefix_cache_queries_total Prefix cache queries.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="Qwen/Qwen3-8B"} ${queries}.0
vllm:prefix_cache_hits_total{engine="0",model_name="Qwen/Qwen3-8B"} ${hits}.0
vllm:external_prefix_cache_hits_total{engine="0",model_name="Qwen/Qwen3-8B"} 7.0
vllm:prompt_tokens_total{engine="0",model_name="Qwen/Qwen3-8B"} ${queries}.0
vllm:generation_tokens_total{engine="0",model_name="Qwen/Qwen3-8B"} 64.0
vllm:num_preemptions_total{engine="0",model_name="Qwen/Qwen3-8B"} 1.0
vllm:cache_config_info{block_size="128",cache_dtype="auto",num_gpu_blocks="80",num_gpu_blocks_override="80"} 1.0
`;

describe('real-engine figures', () => {
  it("reads vLLM's counters and cache shape, and the deltas of a run", () => {
    const before = readCounters(METRICS(100, 1000));
    const after = readCounters(METRICS(850, 2000));
    expect(before).toEqual({ prefixQueries: 1000, prefixHits: 100, promptTokens: 1000, generationTokens: 64, preemptions: 1 });
    expect(counterDelta(before, after)).toEqual({ prefixQueries: 1000, prefixHits: 750, promptTokens: 1000, generationTokens: 0, preemptions: 0 });
    expect(sumCounters([before, after]).prefixHits).toBe(950);
    expect(readCacheConfig(METRICS(0, 0))).toEqual({ blockSize: 128, numGpuBlocks: 80 });
  });

  it('fails on a counter missing or malformed, never reading it as zero', () => {
    expect(() => readCounters(METRICS(1, 2).replace(/^vllm:prefix_cache_hits_total.*$/m, ''))).toThrow('vllm:prefix_cache_hits_total');
    expect(() => readCounters(METRICS(1, 2).replace('64.0', 'NaN'))).toThrow();
    expect(() => readCacheConfig(METRICS(1, 2).replace('block_size="128"', 'block_size="x"'))).toThrow();
  });

  it('ranks with a tie band and finds only real inversions', () => {
    expect(ranksWithTies([50, 49, 30, 80], 2)).toEqual([2, 2, 4, 1]);
    expect(ranksWithTies([10, 12.5, 15], 2)).toEqual([3, 2, 1]);
    // 0 and 1 swap within the band (a tie, not an inversion); 2 passes 0, 1 and 3 by more.
    expect(inversions([50, 49, 30, 80], [49, 50, 85, 80], 2)).toEqual([[0, 2], [1, 2], [2, 3]]);
  });

  it('ranks and inverts with a band per pair, from the spread of repeated runs', () => {
    expect(meanAndSd([70, 74, 72])).toEqual({ mean: 72, sd: 2 });
    expect(meanAndSd([5])).toEqual({ mean: 5, sd: 0 });
    expect(() => meanAndSd([])).toThrow();
    // Twice the standard error of the difference of two 3-run means, never under the floor.
    expect(spreadBand(3, 3, 3, 2)).toBeCloseTo(2 * Math.sqrt(6), 10);
    expect(spreadBand(0.5, 0.5, 3, 2)).toBe(2);
    // Policy 0 varies a lot: its pairs get a wide band; 1 and 2 are steady and 3 points apart.
    const band = (i: number, j: number) => (i === 0 || j === 0 ? 6 : 2);
    expect(ranksWithTies([75, 78, 75, 60], band)).toEqual([1, 1, 2, 4]);
    expect(inversions([75, 78, 75], [80, 76, 79], band)).toEqual([[1, 2]]);
    // The reference tells apart (1, 2) and every pair with 3; b orders (1, 2) the other way, and
    // (0, 3) the same way but within the band.
    expect(agreement([75, 78, 75, 60], [64, 76, 79, 60], band)).toEqual({ resolved: 4, same: 3, sameBeyondBand: 2 });
    // (0, 1) and (0, 2) are within their 6-point band for the reference; b puts 0 11 and 15 points below them.
    expect(separatedOnlyBy([75, 78, 75, 60], [64, 76, 79, 60], band)).toEqual([[0, 1], [0, 2]]);
    expect(separatedOnlyBy([75, 78, 75, 60], [75, 78, 75, 60], band)).toEqual([]);
  });

  it('fits the least-squares line', () => {
    const { intercept, slope } = fitLine([0, 1, 2, 3], [1, 3.1, 4.9, 7]);
    expect(slope).toBeCloseTo(1.98, 2);
    expect(intercept).toBeCloseTo(1.03, 2);
    expect(() => fitLine([1, 1], [2, 3])).toThrow();
  });
});
