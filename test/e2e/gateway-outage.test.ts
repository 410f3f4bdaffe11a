import type { ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { gatewaySessionId } from '../../gateway/client/rendezvous.js';
import { buildBatchInput, followBatch, startBatch } from '../../stack/batches.js';
import { freePort } from '../../stack/ports.js';
import { gatewayAdminToken } from '../../stack/secrets.js';
import { startStack, type Stack } from '../../stack/stack.js';
import { spawnGatewayRole, waitForExit } from '../helpers/processes.js';
import { startTestEngines, testConfig, type TestEngines } from '../helpers/stack.js';

/** Longer than any retry budget of Temporal's alone would ride out for a model call (about 3 s). */
const OUTAGE_MS = 62_000;

let engines: TestEngines | undefined;
let stack: Stack | undefined;
const gateways: ChildProcess[] = [];

afterAll(async () => {
  for (const g of gateways) if (g.exitCode === null && g.signalCode === null) g.kill('SIGKILL');
  await stack?.stop();
  await engines?.close();
});

describe('a gateway killed mid-batch and restarted a minute later', () => {
  it('costs no episode an attempt and no chain a turn', { timeout: 170_000 }, async () => {
    engines = await startTestEngines({ count: 2, timeScale: 0.05 });
    const port = await freePort();
    const config = testConfig({
      engines: engines.instances,
      batch: { concurrency: 4 },
      gateway: { port, url: `http://127.0.0.1:${port}`, replicaId: 'outage-gateway' },
    });
    // Minted before either process starts, so both read the same token from the data directory.
    gatewayAdminToken(config);
    const first = await spawnGatewayRole(config);
    gateways.push(first.child);
    stack = await startStack(config);

    const batchId = `outage-${Date.now()}`;
    const input = await buildBatchInput(config, { batchId, tasks: 'builtin', n: 1, agent: 'builtin' });
    const handle = await startBatch(stack.client, config, input);
    let killed: { done: number } | undefined;
    let restarted: { done: number } | undefined;
    const manifest = await followBatch(
      handle,
      (p) => {
        if (killed || p.done < 1 || p.running === 0) return;
        killed = { done: p.done };
        first.child.kill('SIGKILL');
        void waitForExit(first.child)
          .then(() => new Promise((resolve) => setTimeout(resolve, OUTAGE_MS)))
          .then(() => spawnGatewayRole(config))
          .then(async (second) => {
            gateways.push(second.child);
            restarted = { done: (await stack!.store.listEpisodes(batchId)).length };
          });
      },
      200,
    );

    expect(killed, first.output()).toBeDefined();
    expect(restarted).toBeDefined();
    // Episodes were under way through the whole outage and finished after it.
    expect(restarted!.done).toBeLessThan(input.taskIds.length);
    expect(manifest.status).toBe('complete');
    const episodes = await stack.store.listEpisodes(batchId);
    expect(episodes).toHaveLength(input.taskIds.length);
    for (const episode of episodes) {
      expect(episode.outcome, episode.episodeId).toBe('ok');
      // One session each: the first attempt's, and no other attempt was ever opened.
      expect(episode.sessionId).toBe(gatewaySessionId(episode.episodeId, 0));
      expect(await stack.store.getSession(gatewaySessionId(episode.episodeId, 1))).toBeUndefined();
      const turns = await stack.store.loadTurns(episode.sessionId!);
      expect(turns.length).toBeGreaterThan(0);
      expect(turns.filter((t) => t.rolledBack)).toEqual([]);
      for (const chain of new Set(turns.map((t) => t.chainIndex))) {
        const seqs = turns.filter((t) => t.chainIndex === chain).map((t) => t.seq);
        expect(seqs).toEqual(seqs.map((_, i) => i));
      }
    }
  });
});
