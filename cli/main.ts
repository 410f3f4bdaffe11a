import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { BatchInput, BatchManifest } from '../activities/types.js';
import { ConfigError, loadConfig, type Config } from '../stack/config.js';
import { BatchRequestError, buildBatchInput, followBatch, formatSummary, queryProgress, startBatch } from '../stack/batches.js';
import { dataPaths } from '../stack/paths.js';
import { createSandboxProvider } from '../sandbox/index.js';
import { startApi } from '../stack/roles/api.js';
import { startStandaloneEngines } from '../stack/roles/engines.js';
import { gatewaysListening, startGateways } from '../stack/roles/gateway-processes.js';
import { startPlacementRole } from '../stack/roles/placement.js';
import { startWorker } from '../stack/roles/worker.js';
import { startStack, type Stack } from '../stack/stack.js';
import { temporalConnectionOptions } from '../stack/temporal-connection.js';
import { TaskLoadError } from '../tasks/loader.js';
import { StoreUrlError } from '../trajectory/index.js';
import { GroupFileMismatchError, groupsStream, IncompleteGroupsError } from '../api/group-data.js';
import { openConfiguredArtifacts } from '../stack/artifacts.js';
import { endedBatchManifest } from '../stack/batch-manifest.js';
import { ID_RULE, isSafeId } from '../workflows/ids.js';
import { progressQuery } from '../workflows/queries.js';
import { parseCliArgs, USAGE, UsageError, type ParsedArgs } from './args.js';
import { progressView, renderLine } from './progress-bar.js';
import { createProgressDisplay, type ProgressDisplay } from './progress-display.js';
import { tasksCheck } from './tasks-check.js';

const say = (line: string) => process.stdout.write(`${line}\n`);

/** Resolves once on the first SIGINT or SIGTERM. */
function interrupted(): Promise<string> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
}

function printStackInfo(stack: Stack): void {
  say(`Temporal: ${stack.temporalAddress}${stack.uiUrl ? `  (Web UI: ${stack.uiUrl})` : ''}`);
  say(`gateway:  ${stack.gatewayUrls.join(' ')}`);
  say(`batch API: ${stack.apiUrl}  (OpenAPI: ${stack.apiUrl}/openapi.json)`);
  // Where trainers find the bearer token, never the token itself: the output may be logged.
  say(`API token: ${stack.config.api.token ? 'api.token of the configuration' : `${dataPaths(stack.config.dataDir).apiToken} (or set ROLLOUT_API_TOKEN)`}`);
  say(`engines:  ${stack.engines.map((e) => `${e.name}=${e.url}`).join(', ')}`);
  say(`data:     ${stack.config.dataDir}`);
}

/** How long the closing `progress` query may take before the summary makes do with the last answer. */
const FINAL_PROGRESS_MS = 5_000;

/** The live progress display of `demo` and `batch start --wait`, on stdout. */
function stdoutProgress(args: ParsedArgs): ProgressDisplay {
  return createProgressDisplay(process.stdout, { plainEveryMs: args.progressEvery * 1000 });
}

/**
 * Waits for a batch, showing its progress; the display ends with the ended batch's own counts.
 * A failure ends it too, so a terminal never keeps a hidden cursor.
 */
async function followWithProgress(handle: Parameters<typeof followBatch>[0], display: ProgressDisplay): Promise<BatchManifest> {
  try {
    const manifest = await followBatch(handle, (p) => display.update(p));
    const final = await queryProgress(handle, FINAL_PROGRESS_MS);
    if (final) display.update(final);
    display.finish({ interrupted: false });
    return manifest;
  } catch (error) {
    display.finish({ interrupted: true });
    throw error;
  }
}

async function runBatchOnStack(stack: Stack, input: BatchInput, display: ProgressDisplay): Promise<BatchManifest> {
  say(`starting batch ${input.batchId}: ${input.taskIds.length} tasks x ${input.n} samples, agent ${input.agentName}`);
  const handle = await startBatch(stack.client, stack.config, input);
  const manifest = await followWithProgress(handle, display);
  const episodes = (await stack.store.listEpisodes(input.batchId)).map((e) => ({ taskId: e.taskId, turns: e.numTurns, reward: e.reward }));
  say(formatSummary(manifest, episodes));
  return manifest;
}

/**
 * Stops an interrupted batch: terminating it terminates its episodes too (parent close policy),
 * whose cleanup then never runs, so their sandboxes, agent state and admission leases go here.
 */
async function abandonBatch(stack: Stack, batchId: string): Promise<void> {
  try {
    await stack.client.workflow.getHandle(batchId).terminate('interrupted from the command line');
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
  }
  const sandboxes = createSandboxProvider({ provider: 'bubblewrap', rootDir: dataPaths(stack.config.dataDir).sandboxes });
  for (const sandbox of await sandboxes.list()) {
    if (sandbox.labels.episode?.startsWith(`${batchId}/`)) await sandboxes.destroy(sandbox.id);
  }
  await stack.store.releaseLeasesWithPrefix(`${batchId}/`);
  const stateDir = dataPaths(stack.config.dataDir).agentState;
  const prefix = encodeURIComponent(`${batchId}/`);
  for (const file of await readdir(stateDir)) if (file.startsWith(prefix)) await rm(path.join(stateDir, file), { force: true });
}

async function demo(config: Config, args: ParsedArgs): Promise<void> {
  // Validated before the stack starts: a bad request starts nothing.
  const input = await buildBatchInput(config, {
    batchId: args.id ?? `demo-${new Date().toISOString().replace(/[:.]/g, '-')}`,
    tasks: args.tasks ?? config.batch.tasks,
    n: args.n ?? 4,
    agent: args.agent ?? config.agent.name,
  });
  const batchId = input.batchId;
  const stack = await startStack(config, { log: say });
  printStackInfo(stack);
  const display = stdoutProgress(args);
  const outcome = await Promise.race([runBatchOnStack(stack, input, display).then(() => 'done'), interrupted()]);
  if (outcome !== 'done') {
    display.finish({ interrupted: true });
    say(`\n${outcome}: stopping batch ${batchId} and the stack`);
    await abandonBatch(stack, batchId);
  } else if (stack.uiUrl) {
    say(`Temporal UI: ${stack.uiUrl}/namespaces/${config.temporal.namespace}/workflows?query=${encodeURIComponent(`BatchId="${batchId}"`)}`);
  }
  await stack.stop();
}

async function dev(config: Config): Promise<void> {
  const stack = await startStack(config, { log: say });
  printStackInfo(stack);
  say(`ready; start batches with \`npx rollout batch start --tasks builtin --n 4\` or POST ${stack.apiUrl}/v1/batches; Ctrl-C stops`);
  await interrupted();
  say('stopping');
  await stack.stop();
}

/** One role of a many-machine deployment, started: what to say about it and how to stop it. */
interface RunningRole {
  line: string;
  stop(): Promise<void>;
}

const ROLES = new Map<string, (config: Config) => Promise<RunningRole>>([
  [
    'gateway',
    async (config) => {
      const g = await startGateways(config);
      return { line: gatewaysListening(g), stop: g.stop };
    },
  ],
  [
    'api',
    async (config) => {
      const a = await startApi(config);
      return { line: `batch API listening on ${a.url} (OpenAPI: ${a.url}/openapi.json)`, stop: a.stop };
    },
  ],
  [
    'worker',
    async (config) => {
      const w = await startWorker(config);
      const gateways = config.gateway.urls.length > 0 ? config.gateway.urls.join(', ') : config.gateway.url;
      const metrics = w.metricsUrl ? `; metrics at ${w.metricsUrl}/metrics` : '';
      return { line: `worker joined ${config.temporal.address} (gateway ${gateways})${metrics}`, stop: w.stop };
    },
  ],
  [
    'placement',
    async (config) => {
      const p = await startPlacementRole(config);
      return { line: `placement service listening on ${p.url}`, stop: () => p.close() };
    },
  ],
  [
    'engines',
    async (config) => {
      const e = await startStandaloneEngines(config);
      return { line: `simulated engines: ${e.instances.map((i) => `${i.name}=${i.url}`).join(', ')}`, stop: e.stop };
    },
  ],
]);

/** Runs one role until SIGINT or SIGTERM. */
async function runRole(start: (config: Config) => Promise<RunningRole>, config: Config): Promise<void> {
  const running = await start(config);
  say(`${running.line}; Ctrl-C stops`);
  await interrupted();
  say('stopping');
  await running.stop();
}

async function connectClient(config: Config): Promise<{ client: Client; close(): Promise<void> }> {
  const options = temporalConnectionOptions(config, `127.0.0.1:${config.temporal.devServer.port}`);
  const address = options.address;
  const connection = await Connection.connect({ ...options, connectTimeout: 5_000 }).catch((error: unknown) => {
    throw new ConfigError(`cannot reach Temporal at ${address} (is \`npx rollout dev\` running?): ${(error as Error).message}`);
  });
  return { client: new Client({ connection, namespace: config.temporal.namespace }), close: () => connection.close() };
}

async function batch(config: Config, args: ParsedArgs): Promise<void> {
  const [, sub, id] = args.positionals;
  if (id !== undefined && !isSafeId(id)) throw new UsageError(`batch id ${JSON.stringify(id)} is not valid: ${ID_RULE}`);
  // Validate the tasks before touching Temporal: bad input fails fast and starts nothing.
  const input =
    sub === 'start'
      ? await buildBatchInput(config, {
          batchId: args.id,
          tasks: args.tasks ?? config.batch.tasks,
          n: args.n ?? config.batch.n,
          agent: args.agent ?? config.agent.name,
        })
      : undefined;
  const { client, close } = await connectClient(config);
  try {
    switch (sub) {
      case 'start': {
        if (!input) throw new UsageError('batch start needs --tasks');
        const handle = await startBatch(client, config, input);
        say(`started batch ${input.batchId} (${input.taskIds.length} tasks x ${input.n})`);
        if (args.wait) {
          const display = stdoutProgress(args);
          const outcome = await Promise.race([followWithProgress(handle, display), interrupted()]);
          if (typeof outcome === 'string') {
            display.finish({ interrupted: true });
            // Only the waiting stops: the batch runs on in Temporal.
            say(`${outcome}: batch ${input.batchId} goes on; follow it with \`npx rollout batch status ${input.batchId}\``);
            process.exitCode = 130;
            return;
          }
          say(JSON.stringify(outcome, null, 2));
        }
        return;
      }
      case 'status': {
        if (!id) throw new UsageError('batch status needs a batch id');
        const handle = client.workflow.getHandle(id);
        const description = await handle.describe();
        if (description.status.name === 'RUNNING') say(renderLine(progressView(await handle.query(progressQuery), Date.now())));
        else if (description.status.name === 'COMPLETED' || description.status.name === 'CANCELLED') say(JSON.stringify(await endedBatchManifest(handle), null, 2));
        else say(`batch ${id}: ${description.status.name}`);
        return;
      }
      case 'export': {
        if (!id) throw new UsageError('batch export needs a batch id');
        if (!args.out) throw new UsageError('batch export needs --out FILE');
        // The batch's own group files, joined: exactly the rows the manifest lists.
        const artifacts = openConfiguredArtifacts(config);
        try {
          const manifest = await endedBatchManifest(client.workflow.getHandle(id), artifacts);
          const out = path.resolve(args.out);
          await mkdir(path.dirname(out), { recursive: true });
          await writeFile(out, await groupsStream(artifacts, manifest.groups));
          say(`wrote ${manifest.files.reduce((sum, f) => sum + f.rows, 0)} trajectories of ${manifest.files.length} groups to ${out}`);
        } finally {
          await artifacts.close();
        }
        return;
      }
      default:
        throw new UsageError(`unknown batch command ${JSON.stringify(sub ?? '')}; use start, status or export`);
    }
  } finally {
    await close();
  }
}

async function main(argv: string[]): Promise<void> {
  const args = parseCliArgs(argv);
  const command = args.positionals[0];
  if (!command || command === 'help' || args.help) {
    say(USAGE);
    return;
  }
  const config = await loadConfig(args.config, args.overrides);
  const startRole = ROLES.get(command);
  if (startRole) {
    if (args.positionals.length > 1) throw new UsageError(`rollout ${command} takes no arguments, got ${JSON.stringify(args.positionals.slice(1).join(' '))}`);
    return runRole(startRole, config);
  }
  switch (command) {
    case 'demo':
      return demo(config, args);
    case 'dev':
      return dev(config);
    case 'batch':
      return batch(config, args);
    case 'tasks':
      process.exitCode = await tasksCheck(args, say);
      return;
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
  }
}

const EXPECTED = [UsageError, ConfigError, StoreUrlError, TaskLoadError, BatchRequestError, WorkflowNotFoundError];
/** A batch's data is not whole: its rows are not written out as if it were. */
const DATA_ERRORS = [IncompleteGroupsError, GroupFileMismatchError];

main(process.argv.slice(2)).then(
  () => process.exit(process.exitCode ?? 0),
  (error: unknown) => {
    if (EXPECTED.some((cls) => error instanceof cls)) {
      process.stderr.write(`rollout: ${(error as Error).message}\n`);
      process.exit(2);
    }
    if (DATA_ERRORS.some((cls) => error instanceof cls)) {
      process.stderr.write(`rollout: ${(error as Error).message}\n`);
      process.exit(3);
    }
    process.stderr.write(`rollout: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
