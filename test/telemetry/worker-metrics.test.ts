/**
 * A worker's metrics after a real batch (Temporal, engine-sim, gateway, bubblewrap sandboxes, all
 * in one process on one registry): episodes by outcome and rewards by reason equal what the store
 * recorded, every episode's sandboxes were timed, and each `/metrics` (the worker's listener, the
 * gateway, the API) refuses a scrape without its token.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchManifest } from '../../activities/types.js';
import { buildBatchInput, followBatch, startBatch } from '../../stack/batches.js';
import { gatewayAdminToken } from '../../stack/secrets.js';
import { startStack, type Stack } from '../../stack/stack.js';
import type { EpisodeRecord } from '../../trajectory/index.js';
import { startTestEngines, testConfig, type TestEngines } from '../helpers/stack.js';
import { scrape, total, type Sample } from '../helpers/metrics-scrape.js';

let engines: TestEngines;
let stack: Stack;
let manifest: BatchManifest;
let episodes: EpisodeRecord[];
let adminToken: string;
const batchId = `metrics-${Date.now()}`;

beforeAll(async () => {
  engines = await startTestEngines({ count: 1, wanderProbability: 0.5 });
  const config = testConfig({ engines: engines.instances, worker: { hostId: `host-${batchId}`, metricsPort: 0 } });
  adminToken = gatewayAdminToken(config);
  stack = await startStack(config);
  const input = await buildBatchInput(config, { batchId, tasks: 'builtin', n: 2, agent: 'builtin', taskIds: ['py-roman-numerals-1'] });
  manifest = await followBatch(await startBatch(stack.client, config, input), () => undefined, 250);
  episodes = await stack.store.listEpisodes(batchId);
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await engines?.close();
});

async function workerSamples(): Promise<Sample[]> {
  const answer = await scrape(stack.workerMetricsUrl!, adminToken);
  expect(answer.status).toBe(200);
  return answer.samples;
}

describe('worker metrics after a real batch', () => {
  it('ran the batch', () => {
    expect(manifest.status).toBe('complete');
    expect(episodes).toHaveLength(2);
  });

  it('serves them on worker.metricsPort behind the gateway admin token', async () => {
    expect(stack.workerMetricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await scrape(stack.workerMetricsUrl!)).status).toBe(401);
    expect((await scrape(stack.workerMetricsUrl!, stack.apiToken)).status).toBe(401);
    expect((await fetch(`${stack.workerMetricsUrl}/other`, { headers: { authorization: `Bearer ${adminToken}` } })).status).toBe(404);
  });

  it('counts episodes by outcome and rewards by reason as the store recorded them', async () => {
    const samples = await workerSamples();
    for (const outcome of ['ok', 'infra_error'])
      expect(total(samples, 'rollout_episodes_total', { outcome })).toBe(episodes.filter((e) => e.outcome === outcome).length);
    const rewarded = episodes.filter((e) => e.reward !== null);
    expect(total(samples, 'rollout_rewards_total')).toBe(rewarded.length);
    for (const reason of new Set(rewarded.map((e) => String(e.rewardInfo.reason))))
      expect(total(samples, 'rollout_rewards_total', { reason })).toBe(rewarded.filter((e) => e.rewardInfo.reason === reason).length);
    expect(total(samples, 'rollout_reward_value_sum')).toBeCloseTo(rewarded.reduce((n, e) => n + e.reward!, 0), 9);
    expect(total(samples, 'rollout_admission_waiting_episodes')).toBe(0);
  });

  it('timed every sandbox create, exec and destroy of the episodes', async () => {
    const samples = await workerSamples();
    const ops = (operation: string) => total(samples, 'rollout_sandbox_operation_seconds_count', { operation });
    // Each episode's agent sandbox and its reward sandbox.
    expect(ops('create')).toBeGreaterThanOrEqual(2 * episodes.length);
    expect(ops('destroy')).toBeGreaterThanOrEqual(ops('create'));
    expect(ops('exec')).toBeGreaterThan(0);
    expect(total(samples, 'rollout_sandbox_failures_total', { operation: 'create' })).toBe(0);
  });

  it('shows every role of the process on one registry, and the gateway counted the stored turns', async () => {
    const sessions = episodes.flatMap((e) => (e.sessionId ? [e.sessionId] : []));
    const turns = (await Promise.all(sessions.map((s) => stack.store.loadTurns(s)))).flat();
    expect(turns.length).toBeGreaterThan(0);
    expect((await scrape(stack.gatewayUrl)).status).toBe(401);
    const gateway = await scrape(stack.gatewayUrl, adminToken);
    expect(total(gateway.samples, 'rollout_gateway_turns_total')).toBe(turns.length);
    expect(total(gateway.samples, 'rollout_gateway_sampled_tokens_total')).toBe(turns.reduce((n, t) => n + t.sampled.length, 0));
    expect(total(gateway.samples, 'rollout_episodes_total')).toBe(episodes.length);
    expect((await scrape(stack.apiUrl)).status).toBe(401);
    expect((await scrape(stack.apiUrl, adminToken)).status).toBe(401);
    const api = await scrape(stack.apiUrl, stack.apiToken);
    expect(total(api.samples, 'rollout_episodes_total')).toBe(episodes.length);
  });
});
