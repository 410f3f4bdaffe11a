import type { InstanceConfig } from './instances.js';

/** What the router reads from an engine's Prometheus `/metrics`. */
export interface EngineMetrics {
  /** When the scrape was sent (ms since the epoch): requests routed after it are not counted in it. */
  scrapedAt: number;
  /** Fraction of the KV cache held by running requests, 0..1. */
  kvUsage: number;
  running: number;
  /** Requests waiting in the engine's queue. */
  waiting: number;
  /**
   * Prefix-cache hit rate, 0..1, when the engine reports it: vLLM's hit and query token counters
   * over the engine's lifetime, SGLang's `cache_hit_rate` gauge (its recent window).
   */
  prefixHitRate: number | undefined;
}

/** Each engine's names for the same quantities; the first name present wins. */
const NAMES: Record<InstanceConfig['kind'], { kvUsage: string[]; running: string[]; waiting: string[] }> = {
  // `gpu_cache_usage_perc` is the pre-V1 name of `kv_cache_usage_perc`.
  vllm: {
    kvUsage: ['vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc'],
    running: ['vllm:num_requests_running'],
    waiting: ['vllm:num_requests_waiting'],
  },
  sglang: {
    kvUsage: ['sglang:token_usage'],
    running: ['sglang:num_running_reqs'],
    waiting: ['sglang:num_queue_reqs'],
  },
};

/** One sample line of a Prometheus text exposition; `value` is NaN where the line's is not a number. */
export interface PrometheusSample {
  name: string;
  /** What stands between the braces, unparsed (`parsePrometheusLabels` reads it): most readers need no labels. */
  labelText: string;
  value: number;
}

/** The sample lines of a Prometheus text exposition, in order (comments and blank lines skipped). */
export function parsePrometheusSamples(text: string): PrometheusSample[] {
  const samples: PrometheusSample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const nameEnd = line.search(/[{\s]/);
    if (nameEnd <= 0) continue;
    let rest = nameEnd;
    if (line[rest] === '{') {
      rest = labelsEnd(line, rest);
      if (rest < 0) continue;
    }
    // After the value an optional timestamp may follow.
    const value = Number(line.slice(rest).trim().split(/\s+/)[0]);
    samples.push({ name: line.slice(0, nameEnd), labelText: rest > nameEnd ? line.slice(nameEnd + 1, rest - 1) : '', value });
  }
  return samples;
}

/** A sample's labels by name, their values unescaped (`\\`, `\"`, `\n`). */
export function parsePrometheusLabels(labelText: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const m of labelText.matchAll(/(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"/g)) {
    labels[m[1]!] = m[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
  }
  return labels;
}

/**
 * Numeric samples of a Prometheus text exposition by metric name (labels dropped). An engine
 * serving with data parallelism reports one sample per engine, hence lists.
 */
export function parsePrometheusText(text: string): Map<string, number[]> {
  const samples = new Map<string, number[]>();
  for (const { name, value } of parsePrometheusSamples(text)) {
    if (Number.isNaN(value)) continue;
    const list = samples.get(name);
    if (list) list.push(value);
    else samples.set(name, [value]);
  }
  return samples;
}

/** Index just past the `}` closing the label set opened at `open`, or -1; quoted values may hold `}`. */
function labelsEnd(line: string, open: number): number {
  let quoted = false;
  for (let i = open + 1; i < line.length; i++) {
    const c = line[i];
    if (quoted && c === '\\') i++;
    else if (c === '"') quoted = !quoted;
    else if (!quoted && c === '}') return i + 1;
  }
  return -1;
}

/**
 * The router's metrics from one scrape, in the engine kind's names; undefined when the text lacks
 * the KV usage or request counts (a different engine or metrics disabled). Counts are summed over
 * data-parallel engines and the KV fraction averaged (equal-sized replicas).
 */
export function readEngineMetrics(kind: InstanceConfig['kind'], text: string, scrapedAt: number): EngineMetrics | undefined {
  const samples = parsePrometheusText(text);
  const first = (names: string[]): number[] | undefined => names.map((n) => samples.get(n)).find((s) => s !== undefined);
  const names = NAMES[kind];
  const usage = first(names.kvUsage);
  const running = first(names.running);
  const waiting = first(names.waiting);
  if (!usage || !running || !waiting) return undefined;
  return {
    scrapedAt,
    kvUsage: Math.min(1, Math.max(0, sum(usage) / usage.length)),
    running: sum(running),
    waiting: sum(waiting),
    prefixHitRate: kind === 'vllm' ? vllmHitRate(samples) : samples.get('sglang:cache_hit_rate')?.[0],
  };
}

function vllmHitRate(samples: Map<string, number[]>): number | undefined {
  const hits = samples.get('vllm:prefix_cache_hits_total');
  const queries = samples.get('vllm:prefix_cache_queries_total');
  if (!hits || !queries) return undefined;
  const q = sum(queries);
  return q === 0 ? 0 : sum(hits) / q;
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

/** Fetches and reads an engine's `/metrics`; undefined when it cannot be read. */
export async function scrapeEngineMetrics(
  instance: Pick<InstanceConfig, 'kind' | 'url'>,
  timeoutMs: number,
  now: () => number,
): Promise<EngineMetrics | undefined> {
  const scrapedAt = now();
  try {
    const response = await fetch(`${instance.url}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
    const text = await response.text();
    return response.ok ? readEngineMetrics(instance.kind, text, scrapedAt) : undefined;
  } catch {
    // Unreachable or slow: the caller keeps its older metrics, which age into its own estimate.
    return undefined;
  }
}
