/**
 * npm run bench:trainer
 *
 * What a trainer waits for: time from batch start to the first group's rows in its hands, and to
 * the whole batch, with groups streamed by the `finishedGroups` update as they finish versus
 * waiting for the manifest and then reading the files. Same workload, same stack, same run; the
 * variants alternate so warm-up weighs on both alike. Prints figures and ratios; asserts nothing.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { tableFromIPC } from 'apache-arrow';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BatchManifest, FinishedGroupsAnswer, ManifestFile } from '../activities/types.js';
import { startEngineSim, type EngineSim } from '../engine-sim/index.js';
import { loadJsTokenizer } from '../gateway/codec/js-tokenizer.js';
import { buildBatchInput, startBatch } from '../stack/batches.js';
import { ConfigSchema } from '../stack/config.js';
import { freePort } from '../stack/ports.js';
import { startStack } from '../stack/stack.js';
import { startDevServer } from '../stack/temporal-dev-server.js';
import { builtinPackDir, loadTasks } from '../tasks/loader.js';
import { scriptForTask } from '../tasks/solution-script.js';
import type { batchWorkflow } from '../workflows/batch.js';
import { finishedGroupsUpdate } from '../workflows/updates.js';

const N = Number(process.env.BENCH_N ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const TIME_SCALE = Number(process.env.BENCH_TIME_SCALE ?? 0.02);

interface Timing {
  firstGroupS: number;
  wholeBatchS: number;
  rows: number;
}

/** The trainer taking a group in hand: its rows read from its Arrow file. */
function readFile(file: ManifestFile): number {
  return tableFromIPC(readFileSync(fileURLToPath(file.uri))).numRows;
}

async function streamed(handle: WorkflowHandle<typeof batchWorkflow>, started: number): Promise<Timing> {
  let first: number | undefined;
  let rows = 0;
  let cursor = 0;
  for (;;) {
    const answer: FinishedGroupsAnswer = await handle.executeUpdate(finishedGroupsUpdate, { args: [{ after: cursor }] });
    for (const group of answer.groups) {
      if (!group.file) continue;
      rows += readFile(group.file);
      first ??= performance.now();
    }
    cursor = answer.next;
    if (answer.done) break;
  }
  const end = performance.now();
  return { firstGroupS: ((first ?? end) - started) / 1000, wholeBatchS: (end - started) / 1000, rows };
}

async function waited(handle: WorkflowHandle<typeof batchWorkflow>, started: number): Promise<Timing> {
  const manifest: BatchManifest = await handle.result();
  let first: number | undefined;
  let rows = 0;
  for (const file of manifest.files) {
    rows += readFile(file);
    first ??= performance.now();
  }
  const end = performance.now();
  return { firstGroupS: ((first ?? end) - started) / 1000, wholeBatchS: (end - started) / 1000, rows };
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'bench-trainer-'));
  const server = await startDevServer({ dataDir: path.join(dataDir, 'temporal'), port: await freePort(), uiPort: 0 });
  const tasks = await loadTasks(builtinPackDir());
  const sims: EngineSim[] = [];
  for (let i = 0; i < 2; i++) sims.push(await startEngineSim({ tokenizer: await loadJsTokenizer(), script: { tasks: tasks.map(scriptForTask), wanderProbability: 0.3 }, timeScale: TIME_SCALE, seed: 3 + i }));
  const config = ConfigSchema.parse({
    dataDir,
    temporal: { address: server.address },
    gateway: { port: 0 },
    api: { port: 0 },
    engines: sims.map((sim, i) => ({ name: `sim-${i}`, url: sim.url, kvCapacityTokens: 200_000 })),
    batch: { concurrency: CONCURRENCY, filterUniformGroups: false },
  });
  const stack = await startStack(config);
  console.log(`trainer benchmark: ${tasks.length} tasks x ${N} samples, ${CONCURRENCY} episodes at once, engine-sim time scale ${TIME_SCALE}, ${ROUNDS} round(s), ${os.cpus().length} cores`);
  const totals = { streamed: { firstGroupS: 0, wholeBatchS: 0 }, waited: { firstGroupS: 0, wholeBatchS: 0 } };
  try {
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate the order so neither variant always runs on a warmer stack.
      const order = round % 2 === 0 ? (['streamed', 'waited'] as const) : (['waited', 'streamed'] as const);
      for (const variant of order) {
        const input = await buildBatchInput(config, { batchId: `bench-${variant}-${round}`, tasks: 'builtin', n: N, agent: 'builtin' });
        const started = performance.now();
        const handle = await startBatch(stack.client, config, input);
        const timing = variant === 'streamed' ? await streamed(handle, started) : await waited(handle, started);
        totals[variant].firstGroupS += timing.firstGroupS;
        totals[variant].wholeBatchS += timing.wholeBatchS;
        console.log(`  round ${round + 1} ${variant.padEnd(8)}  first group in hand ${timing.firstGroupS.toFixed(2).padStart(7)} s   whole batch ${timing.wholeBatchS.toFixed(2).padStart(7)} s   (${timing.rows} rows)`);
      }
    }
    const mean = (v: 'streamed' | 'waited', k: 'firstGroupS' | 'wholeBatchS') => totals[v][k] / ROUNDS;
    console.log(`mean over ${ROUNDS} round(s):`);
    console.log(`  streamed (finishedGroups update): first group ${mean('streamed', 'firstGroupS').toFixed(2)} s, whole batch ${mean('streamed', 'wholeBatchS').toFixed(2)} s`);
    console.log(`  waited (manifest, then files):    first group ${mean('waited', 'firstGroupS').toFixed(2)} s, whole batch ${mean('waited', 'wholeBatchS').toFixed(2)} s`);
    console.log(`ratio waited/streamed: first group ${(mean('waited', 'firstGroupS') / mean('streamed', 'firstGroupS')).toFixed(2)}x, whole batch ${(mean('waited', 'wholeBatchS') / mean('streamed', 'wholeBatchS')).toFixed(2)}x`);
  } finally {
    await stack.stop();
    await Promise.all(sims.map((s) => s.close()));
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
