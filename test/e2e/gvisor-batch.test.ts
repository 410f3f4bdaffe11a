/**
 * `sandbox.provider: gvisor` end to end: the worker role makes the gVisor provider from the
 * configuration, and a batch's agent commands and hidden-test rewards all run under runsc.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { buildBatchInput, followBatch, startBatch } from '../../stack/batches.js';
import { startStack, type Stack } from '../../stack/stack.js';
import { hostProcessesMatching } from '../sandbox/helpers.js';
import { startTestEngines, testConfig, type TestEngines } from '../helpers/stack.js';

let engines: TestEngines | undefined;
let stack: Stack | undefined;

afterAll(async () => {
  await stack?.stop();
  await engines?.close();
});

describe('a batch with sandbox.provider: gvisor', () => {
  it('runs every episode and its reward under gVisor and scores it', { timeout: 240_000 }, async () => {
    engines = await startTestEngines({ count: 1, wanderProbability: 0 });
    const config = testConfig({
      engines: engines.instances,
      sandbox: { provider: 'gvisor' },
      batch: { concurrency: 2, filterUniformGroups: false },
    });
    stack = await startStack(config);
    // The Sentries of this worker's sandboxes, seen on the host while the batch runs.
    const sentries = new Set<string>();
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        for (const p of await hostProcessesMatching('runsc-sandbox')) {
          if (p.includes(`-${process.pid}-`)) sentries.add(p.split(':')[0]!);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const input = await buildBatchInput(config, {
      batchId: `gvisor-${Date.now()}`,
      tasks: 'builtin',
      n: 1,
      agent: 'builtin',
      taskIds: ['py-roman-numerals-1', 'js-ini-parser-1'],
    });
    const manifest = await followBatch(await startBatch(stack.client, config, input), () => undefined);
    sampling = false;
    await sampler;

    expect(manifest.status).toBe('complete');
    expect(manifest.groups.map((g) => g.rewards)).toEqual([[1], [1]]);
    expect(sentries.size).toBeGreaterThan(0);
  });
});
