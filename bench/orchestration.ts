/**
 * npm run bench:orchestration
 *
 * Episodes per second for trivial episodes (no-op activities, one agent step) through a real
 * Temporal dev server (SQLite) and then through the Temporal server on a private PostgreSQL
 * cluster, each next to a bare baseline measured on the same server: a workflow running the same
 * number of no-op activities. Also the same episodes fanned out by the batch workflow. Prints
 * figures and ratios; asserts nothing about speed.
 */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BatchRequest, EpisodeInput } from '../activities/types.js';
import { startPostgresCluster } from '../stack/postgres-cluster.js';
import { startDevServer } from '../stack/temporal-dev-server.js';
import { startTemporalServer } from '../stack/temporal-server.js';
import { DirectoryArtifacts, SqliteStore } from '../trajectory/index.js';
import { installWorkerRuntime } from '../workers/worker.js';
import { createNoopActivities, EPISODE_ACTIVITIES } from './noop-activities.js';
import { freePort } from '../stack/ports.js';
import { SAMPLING_DEFAULTS } from '../gateway/sampling-schema.js';

const EPISODES = Number(process.env.BENCH_EPISODES ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const TASK_QUEUE = 'bench-orchestration';
const HOST_QUEUE = `${TASK_QUEUE}-host`;

const limits = { maxTurns: 4, maxContextTokens: 32_768, maxWallTimeMs: 600_000, maxInfraAttempts: 3, commandTimeoutMs: 60_000 };
const sampling = { ...SAMPLING_DEFAULTS, maxTokens: 1024 };

async function timed(label: string, run: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await run();
  const seconds = (performance.now() - started) / 1000;
  console.log(`  ${label.padEnd(44)} ${seconds.toFixed(2).padStart(7)} s  ${(EPISODES / seconds).toFixed(1).padStart(7)} episodes/s`);
  return seconds;
}

interface Figures {
  baseline: number;
  episodes: number;
  batch: number;
}

/** The three measurements, in alternating rounds, against the Temporal front end at `address`. */
async function measure(address: string, workflowBundle: WorkflowBundleWithSourceMap, dataDir: string): Promise<Figures> {
  const nativeConnection = await NativeConnection.connect({ address });
  const store = SqliteStore.open(path.join(dataDir, 'store.sqlite'));
  const activities = createNoopActivities(HOST_QUEUE, { store, artifacts: new DirectoryArtifacts(path.join(dataDir, 'artifacts')) });
  const workers = await Promise.all(
    [TASK_QUEUE, HOST_QUEUE].map((taskQueue) =>
      Worker.create({ connection: nativeConnection, taskQueue, workflowBundle: taskQueue === TASK_QUEUE ? workflowBundle : undefined, activities, maxConcurrentActivityTaskExecutions: 200, maxConcurrentWorkflowTaskExecutions: 100 }),
    ),
  );
  const running = Promise.all(workers.map((w) => w.run()));
  const connection = await Connection.connect({ address });
  const client = new Client({ connection });
  const run = Date.now();
  const episode = (i: number): EpisodeInput => ({ batchId: 'bench', groupId: 'bench.g0', taskSource: 'builtin', taskId: 'noop', episodeIndex: i, agentName: 'noop', limits, sampling });

  let started = 0;
  const startAll = (workflow: string, args: (i: number) => unknown[]) =>
    Promise.all(Array.from({ length: EPISODES }, (_, i) => client.workflow.execute(workflow, { taskQueue: TASK_QUEUE, workflowId: `${workflow}-${run}-${started++}`, args: args(i) })));

  // Warm-up: the first workflows pay for worker start-up and sticky caches.
  await Promise.all(Array.from({ length: 10 }, (_, i) => client.workflow.execute('baselineWorkflow', { taskQueue: TASK_QUEUE, workflowId: `warm-${run}-${i}`, args: [EPISODE_ACTIVITIES] })));

  // Rounds alternate the three so that server warm-up and a growing database weigh on each alike.
  const totals = { baseline: 0, episodes: 0, batch: 0 };
  for (let round = 0; round < ROUNDS; round++) {
    console.log(`round ${round + 1} of ${ROUNDS}`);
    totals.baseline += await timed(`baseline: bare workflow, ${EPISODE_ACTIVITIES} no-op activities`, () => startAll('baselineWorkflow', () => [EPISODE_ACTIVITIES]));
    totals.episodes += await timed('episode workflows, started by the client', () => startAll('episodeWorkflow', (i) => [episode(i)]));
    const batchInput: BatchRequest = { batchId: `bench-batch-${run}-${round}`, taskSource: 'builtin', taskIds: Array.from({ length: EPISODES / 4 }, (_, i) => `t${i}`), n: 4, agentName: 'noop', concurrency: 64, filterUniformGroups: false, limits, sampling };
    totals.batch += await timed('episodes fanned out by one batch workflow', () => client.workflow.execute('batchWorkflow', { taskQueue: TASK_QUEUE, workflowId: batchInput.batchId!, args: [batchInput] }));
  }
  const rate = (seconds: number) => ((EPISODES * ROUNDS) / seconds).toFixed(1);
  console.log(`over ${ROUNDS} rounds: baseline ${rate(totals.baseline)} episodes/s, episode ${rate(totals.episodes)}, batch ${rate(totals.batch)}`);
  console.log(`ratio episode/baseline throughput: ${(totals.baseline / totals.episodes).toFixed(2)}`);
  console.log(`ratio batch/baseline throughput:   ${(totals.baseline / totals.batch).toFixed(2)}`);

  for (const w of workers) w.shutdown();
  await running;
  await connection.close();
  await nativeConnection.close();
  await store.close();
  return totals;
}

async function main(): Promise<void> {
  installWorkerRuntime();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'bench-orch-'));
  // As root, PostgreSQL runs as the postgres user, which must reach its data directory inside.
  chmodSync(dataDir, 0o711);
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: fileURLToPath(new URL('./orchestration-workflows.ts', import.meta.url)),
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
  });
  console.log(`orchestration benchmark: ${EPISODES} trivial episodes (${EPISODE_ACTIVITIES} no-op activities each), ${os.cpus().length} cores`);

  const devServer = await startDevServer({ dataDir: path.join(dataDir, 'dev-server'), port: await freePort(), uiPort: 0 });
  console.log(`Temporal dev server (SQLite) ${devServer.address}`);
  const dev = await measure(devServer.address, workflowBundle, path.join(dataDir, 'dev-results'));
  await devServer.stop();

  const postgres = await startPostgresCluster({ dataDir: path.join(dataDir, 'postgres'), port: await freePort() });
  const server = await startTemporalServer({ dataDir: path.join(dataDir, 'temporal-server'), postgres, port: await freePort() });
  console.log(`Temporal server on PostgreSQL ${server.address}`);
  const pg = await measure(server.address, workflowBundle, path.join(dataDir, 'pg-results'));
  await server.stop();
  await postgres.stop();

  // Each ratio is against bare Temporal on the same server: what our workflow structure costs there.
  console.log('summary (episodes/s; ratio to the bare baseline on the same server):');
  for (const [label, figures] of [['dev server (SQLite)', dev], ['server on PostgreSQL', pg]] as const) {
    const rate = (seconds: number) => ((EPISODES * ROUNDS) / seconds).toFixed(1).padStart(6);
    console.log(
      `  ${label.padEnd(22)} baseline ${rate(figures.baseline)}  episode ${rate(figures.episodes)} (${(figures.baseline / figures.episodes).toFixed(2)})  batch ${rate(figures.batch)} (${(figures.baseline / figures.batch).toFixed(2)})`,
    );
  }
  rmSync(dataDir, { recursive: true, force: true });
}

await main();
