import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchManifest } from '../../activities/types.js';
import { rendezvousOrder } from '../../gateway/client/rendezvous.js';
import { buildBatchInput, followBatch, startBatch } from '../../stack/batches.js';
import { startStack, type Stack } from '../../stack/stack.js';
import { startTestEngines, testConfig, type TestEngines } from '../helpers/stack.js';

/** The embedded stack with two gateway processes: a short batch of the built-in pack through both. */
let engines: TestEngines;
let stack: Stack;
let manifest: BatchManifest;
const batchId = `procs-${Date.now()}`;
const N = 2;

beforeAll(async () => {
  engines = await startTestEngines({ count: 2, wanderProbability: 0.4 });
  const config = testConfig({
    engines: engines.instances,
    gateway: { port: 0, processes: 2 },
    batch: { concurrency: 8 },
  });
  stack = await startStack(config);
  const input = await buildBatchInput(config, {
    batchId,
    tasks: 'builtin',
    n: N,
    agent: 'builtin',
  });
  manifest = await followBatch(await startBatch(stack.client, config, input), () => undefined, 250);
});

afterAll(async () => {
  await stack?.stop();
  await engines?.close();
});

describe('a batch on the embedded stack with gateway.processes: 2', () => {
  it('gives every client both gateways', () => {
    expect(stack.gatewayUrls).toHaveLength(2);
    expect(new Set(stack.gatewayUrls).size).toBe(2);
    expect(stack.gatewayUrl).toBe(stack.gatewayUrls[0]);
  });

  it('completes every episode ok, as the store records them', async () => {
    expect(manifest.status).toBe('complete');
    const episodes = await stack.store.listEpisodes(batchId);
    expect(episodes).toHaveLength(manifest.groups.length * N);
    expect(manifest.stats.episodes).toBe(episodes.length);
    expect(episodes.every((e) => e.outcome === 'ok')).toBe(true);
    for (const group of manifest.groups) expect(group.n_ok).toBe(N);
    for (const episode of episodes) {
      const turns = await stack.store.loadTurns(episode.sessionId!);
      expect(turns.length, episode.episodeId).toBeGreaterThan(0);
      expect(turns.filter((t) => !t.rolledBack).length).toBe(episode.numTurns);
    }
  });

  it('placed each session on the process its id hashes to, so none was forwarded, and both served', async () => {
    const replicaOf = new Map(stack.gatewayUrls.map((url, i) => [url, `${os.hostname()}:0/p${i}`]));
    const owners = new Set<string>();
    for (const episode of await stack.store.listEpisodes(batchId)) {
      const owner = (await stack.store.getSession(episode.sessionId!))?.owner;
      expect(owner, episode.sessionId!).toBe(
        replicaOf.get(rendezvousOrder(stack.gatewayUrls, episode.sessionId!)[0]!),
      );
      owners.add(owner!);
    }
    expect(owners).toEqual(new Set(replicaOf.values()));
  });
});
