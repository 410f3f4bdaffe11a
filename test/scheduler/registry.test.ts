import { SqliteStore } from '../../trajectory/index.js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startEngineSim, type EngineSim } from '../../engine-sim/index.js';
import { AdmissionControl } from '../../scheduler/admission.js';
import { parsePrometheusLabels, parsePrometheusSamples, parsePrometheusText, readEngineMetrics } from '../../scheduler/metrics-scraper.js';
import { InstanceRegistry } from '../../scheduler/registry.js';
import { testEngineTokenizer } from '../helpers/stack.js';

const KV = 1024;

/** Starts a streamed completion on the engine and returns its aborter; the engine holds its KV until then. */
function hold(sim: EngineSim, maxTokens: number): AbortController {
  const controller = new AbortController();
  void fetch(`${sim.url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], max_tokens: maxTokens, stream: true }),
    signal: controller.signal,
  })
    .then((r) => r.arrayBuffer())
    .catch(() => {});
  return controller;
}

describe('metrics text', () => {
  it('reads samples by name across label sets, quoted braces and timestamps', () => {
    const samples = parsePrometheusText(
      [
        '# HELP vllm:num_requests_running Number of requests.',
        '# TYPE vllm:num_requests_running gauge',
        'vllm:num_requests_running{engine="0",model_name="a}b"} 2.0 1712345678000',
        'vllm:num_requests_running{engine="1",model_name="a\\"}"} 3',
        'plain_metric 7',
        'broken{unclosed="x 1',
      ].join('\n'),
    );
    expect(samples.get('vllm:num_requests_running')).toEqual([2, 3]);
    expect(samples.get('plain_metric')).toEqual([7]);
    expect(samples.has('broken')).toBe(false);
  });

  it('reads a sample\'s labels, quoted braces and escapes included', () => {
    const [sample] = parsePrometheusSamples('vllm:cache_config_info{block_size="128",model_name="a\\"}\\\\b",note="x\\ny"} 1.0');
    expect(sample).toMatchObject({ name: 'vllm:cache_config_info', value: 1 });
    expect(parsePrometheusLabels(sample!.labelText)).toEqual({ block_size: '128', model_name: 'a"}\\b', note: 'x\ny' });
  });

  it("sums data-parallel engines' counts, averages their KV usage, and needs the kind's names", () => {
    const text = [
      'vllm:gpu_cache_usage_perc{engine="0"} 0.5',
      'vllm:gpu_cache_usage_perc{engine="1"} 0.25',
      'vllm:num_requests_running{engine="0"} 4',
      'vllm:num_requests_running{engine="1"} 1',
      'vllm:num_requests_waiting{engine="0"} 2',
      'vllm:num_requests_waiting{engine="1"} 0',
    ].join('\n');
    expect(readEngineMetrics('vllm', text, 5)).toEqual({ scrapedAt: 5, kvUsage: 0.375, running: 5, waiting: 2, prefixHitRate: undefined });
    expect(readEngineMetrics('sglang', text, 5)).toBeUndefined();
  });
});

describe('admission with the registry', () => {
  it('gives new episodes a healthy home only', async () => {
    const instances = ['a', 'b'].map((name) => ({ name, kind: 'vllm' as const, url: 'http://127.0.0.1:1', kvCapacityTokens: 20_000 }));
    const registry = new InstanceRegistry(instances);
    const admission = await AdmissionControl.create(SqliteStore.open(':memory:'), instances, { episodeTokens: 10_000, leaseTtlMs: 1_000 }, (name) =>
      registry.isHealthy(name),
    );
    registry.markDown('a');
    const homes: (string | undefined)[] = [];
    for (const id of ['e0', 'e1', 'e2']) homes.push((await admission.tryAdmit(id, 0))?.instance);
    expect(homes).toEqual(['b', 'b', undefined]);
  });
});

describe('instance registry against engine-sim', () => {
  let sim: EngineSim;
  const holds: AbortController[] = [];

  beforeEach(async () => {
    const tokenizer = await testEngineTokenizer();
    // Slow enough (a step takes seconds) that a held request keeps its KV for the whole test.
    sim = await startEngineSim({ tokenizer, kvCapacityTokens: KV, timeScale: 1000 });
  });

  afterEach(async () => {
    for (const h of holds.splice(0)) h.abort();
    await sim?.close();
  });

  it("reads vLLM's and SGLang's metric names from a real /metrics", async () => {
    // The first request reserves 640 of 1024 tokens; the second cannot fit and waits.
    holds.push(hold(sim, 630), hold(sim, 630));
    await vi.waitFor(() => expect(sim.stats()).toMatchObject({ running: 1, waiting: 1 }));
    const registry = new InstanceRegistry([
      { name: 'v', kind: 'vllm', url: sim.url, kvCapacityTokens: KV },
      { name: 's', kind: 'sglang', url: sim.url, kvCapacityTokens: KV },
    ]);
    await registry.refresh();
    const stats = sim.stats();
    const expected = { kvUsage: stats.kvUsedTokens / stats.kvCapacityTokens, running: 1, waiting: 1 };
    expect(expected.kvUsage).toBeGreaterThan(0.6);
    expect(registry.metrics('v')).toMatchObject({ ...expected, prefixHitRate: 0 });
    expect(registry.metrics('s')).toMatchObject({ ...expected, prefixHitRate: 0 });
    for (const view of registry.views()) {
      expect(view).toMatchObject({ kvCapacityTokens: KV, kvUsedTokens: stats.kvUsedTokens, queuedRequests: 1, inFlightRequests: 0, healthy: true });
    }
  });

  it("adds calls sent since the scrape, and falls back to its own in-flight accounting when metrics are stale", async () => {
    holds.push(hold(sim, 630));
    await vi.waitFor(() => expect(sim.stats().running).toBe(1));
    let now = 1_000_000;
    const registry = new InstanceRegistry([{ name: 'v', kind: 'vllm', url: sim.url, kvCapacityTokens: KV }], {
      metricsMaxAgeMs: 5_000,
      now: () => now,
    });
    const before = registry.begin('v', 100);
    now += 1;
    await registry.scrape('v');
    const engineUsed = sim.stats().kvUsedTokens;
    now += 1;
    const after = registry.begin('v', 50);
    // The engine already counts the call sent before the scrape, not the one sent after.
    expect(registry.views()[0]).toMatchObject({ kvUsedTokens: engineUsed + 50, inFlightRequests: 2, inFlightTokens: 150, queuedRequests: 0 });

    now += 5_001;
    expect(registry.views()[0]).toMatchObject({ kvUsedTokens: 150, inFlightTokens: 150 });
    registry.end(before);
    registry.end(after);
    expect(registry.views()[0]).toMatchObject({ kvUsedTokens: 0, inFlightRequests: 0, inFlightTokens: 0 });
  });

  it('takes an instance out after failed health checks or a failed call, and back when a check passes', async () => {
    const tokenizer = await testEngineTokenizer();
    let engine = await startEngineSim({ tokenizer, timeScale: 0 });
    const port = engine.port;
    const registry = new InstanceRegistry([{ name: 'e', kind: 'sglang', url: engine.url }], { unhealthyAfterFailures: 2 });
    const down: string[] = [];
    registry.onDown((name) => down.push(name));
    try {
      expect(await registry.checkHealth('e')).toBe(true);
      await registry.scrape('e');
      expect(registry.metrics('e')).toBeDefined();

      await engine.close();
      expect(await registry.checkHealth('e')).toBe(true); // one failure may be a blip
      expect(await registry.checkHealth('e')).toBe(false);
      expect(down).toEqual(['e']);
      expect(registry.metrics('e')).toBeUndefined();
      expect(registry.views()[0]!.healthy).toBe(false);
      expect(await registry.checkHealth('e')).toBe(false);
      expect(down).toEqual(['e']);

      engine = await startEngineSim({ tokenizer, timeScale: 0, port });
      expect(await registry.checkHealth('e')).toBe(true);
      expect(registry.isHealthy('e')).toBe(true);

      registry.markDown('e');
      expect(registry.isHealthy('e')).toBe(false);
      expect(down).toEqual(['e', 'e']);
      expect(await registry.checkHealth('e')).toBe(true);
    } finally {
      await registry.close();
      await engine.close();
    }
  });

  it('runs its checks on timers until closed', async () => {
    const tokenizer = await testEngineTokenizer();
    const engine = await startEngineSim({ tokenizer, timeScale: 0 });
    const registry = new InstanceRegistry([{ name: 'e', kind: 'vllm', url: engine.url }], {
      healthIntervalMs: 10,
      metricsIntervalMs: 10,
      unhealthyAfterFailures: 1,
    });
    registry.start();
    try {
      await vi.waitFor(() => expect(registry.metrics('e')).toBeDefined());
      await engine.close();
      await vi.waitFor(() => expect(registry.isHealthy('e')).toBe(false));
    } finally {
      await registry.close();
    }
  });
});
