/**
 * Records workflow histories from a real run for the replay tests:
 *   npm run replay:record
 * Starts its own Temporal dev server, simulated engines, gateway and worker; runs a small batch
 * (with injected sandbox failures, so retries and a restarted attempt are in the histories) and a
 * batch that continues as new, its finished groups taken with the `finishedGroups` update as a
 * trainer does; writes the histories to test/replay/histories/.
 */
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEngineSim } from '../../engine-sim/index.js';
import { loadJsTokenizer } from '../../gateway/codec/js-tokenizer.js';
import { buildBatchInput, followBatch, startBatch } from '../../stack/batches.js';
import { ConfigSchema } from '../../stack/config.js';
import { startStack } from '../../stack/stack.js';
import { startDevServer } from '../../stack/temporal-dev-server.js';
import { builtinPackDir, loadTasks } from '../../tasks/loader.js';
import { scriptForTask } from '../../tasks/solution-script.js';
import { freePort } from '../../stack/ports.js';
import { finishedGroupsUpdate } from '../../workflows/updates.js';

const OUT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'histories');
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'rollout-record-'));
const server = await startDevServer({ dataDir: path.join(dataDir, 'temporal'), port: await freePort(), uiPort: 0 });
const tasks = await loadTasks(builtinPackDir());
const sim = await startEngineSim({ tokenizer: await loadJsTokenizer(), script: { tasks: tasks.map(scriptForTask), wanderProbability: 0.5 }, timeScale: 0.01, seed: 5 });
const config = ConfigSchema.parse({
  dataDir,
  temporal: { address: server.address },
  gateway: { port: 0 },
  api: { port: 0 },
  engines: [{ name: 'sim-0', url: sim.url, kvCapacityTokens: 200_000 }],
  sandbox: { createFailureRate: 0.4, faultSeed: 11 },
  batch: { concurrency: 4, continueAfterEvents: 12 },
});
const stack = await startStack(config);
try {
  const batchId = 'replay-batch';
  const input = await buildBatchInput(config, { batchId, tasks: 'builtin', n: 2, agent: 'builtin', taskIds: ['js-ini-parser-1', 'py-roman-numerals-1', 'js-lru-cache-1'] });
  const handle = await startBatch(stack.client, config, input);
  const takeGroups = async () => {
    for (let after = 0; ; ) {
      const answer = await handle.executeUpdate(finishedGroupsUpdate, { args: [{ after }] }).catch(() => undefined);
      if (!answer || answer.done) return;
      after = answer.next;
      console.log(`took ${answer.groups.length} group(s), cursor ${after}`);
    }
  };
  await Promise.all([followBatch(handle, (p) => console.log(`${p.done}/${p.total}`)), takeGroups()]);
  const ids: string[] = [];
  for await (const run of stack.client.workflow.list({ query: `WorkflowId = "${batchId}" OR BatchId = "${batchId}"` })) {
    ids.push(`${run.workflowId}@${run.runId}`);
  }
  rmSync(OUT, { recursive: true, force: true });
  for (const entry of ids) {
    const [workflowId, runId] = entry.split('@') as [string, string];
    const history = await stack.client.workflow.getHandle(workflowId, runId).fetchHistory();
    const name = `${workflowId.replace(/[^A-Za-z0-9.-]+/g, '_')}.${runId.slice(-12)}.json`;
    mkdirSync(OUT, { recursive: true });
    writeFileSync(path.join(OUT, name), historyToJSON(history));
    console.log(`recorded ${name} (${history.events?.length ?? 0} events)`);
  }
} finally {
  await stack.stop();
  await sim.close();
  await server.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
