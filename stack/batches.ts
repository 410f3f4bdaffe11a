import { WorkflowExecutionAlreadyStartedError, WorkflowIdConflictPolicy, WorkflowIdReusePolicy, type Client, type WorkflowHandle } from '@temporalio/client';
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BatchInput, BatchManifest, BatchProgress, EpisodeLimits, Sampling, StaleAction } from '../activities/types.js';
import { BUILTIN_TASKS } from '../activities/task-catalog.js';
import { blackBoxAgentNames, isBlackBoxAgent } from '../agents/presets/index.js';
import { checkTasks, formatFailure } from '../tasks/datasets/checks.js';
import { builtinPackDir, formatTaskSource, loadTaskReport, parseTaskSource } from '../tasks/loader.js';
import type { batchWorkflow } from '../workflows/batch.js';
import { boundViolation } from '../workflows/batch-bounds.js';
import { ID_RULE, isSafeId } from '../workflows/ids.js';
import { progressQuery } from '../workflows/queries.js';
import { endedBatchManifest } from './batch-manifest.js';
import { episodeLimits, type Config } from './config.js';

/** A batch as the CLI and the HTTP API ask for it; what is left out comes from the configuration. */
export interface BatchSpec {
  /** Default: `batch-<timestamp>`. */
  batchId?: string;
  /**
   * `builtin`, a task pack or Harbor directory, or a JSON/JSONL task file, optionally prefixed by
   * its format (`swe-rebench:/data/x.jsonl`; tasks/loader.ts).
   */
  tasks: string;
  n: number;
  agent: string;
  /** Limit to these task ids (default: all tasks of the source). */
  taskIds?: string[];
  /** Default: `batch.concurrency`. */
  concurrency?: number;
  /** Default: `batch.filterUniformGroups`. */
  filterUniformGroups?: boolean;
  /** Each key given replaces the one of `limits`. */
  limits?: Partial<EpisodeLimits>;
  /** Each key given replaces the one of `sampling`. */
  sampling?: Partial<Sampling>;
  /** Default: no staleness bound. */
  maxStaleness?: number | null;
  /** Default `drop`. */
  staleAction?: StaleAction;
}

export class BatchRequestError extends Error {
  override name = 'BatchRequestError';
}

/** The path with its symbolic links resolved as far as it exists, so a link cannot lead out of a root. */
async function resolvedPath(file: string): Promise<string> {
  try {
    return await realpath(file);
  } catch {
    return file;
  }
}

/**
 * The task source as an absolute path, when it lies under `batch.taskRoots` (default: the working
 * directory): a request must not make the server read any file it can name.
 */
async function allowedTaskSource(config: Config, tasks: string): Promise<string> {
  const source = path.resolve(tasks);
  const roots = config.batch.taskRoots.length > 0 ? config.batch.taskRoots : [process.cwd()];
  const real = await resolvedPath(source);
  for (const root of roots) {
    const base = await resolvedPath(path.resolve(root));
    const inside = (p: string) => {
      const rel = path.relative(base, p);
      return rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel);
    };
    if (inside(source) && inside(real)) return source;
  }
  throw new BatchRequestError(`tasks ${tasks} is outside batch.taskRoots (${roots.join(', ')}); use builtin or a path under one of them`);
}

/**
 * Validates the request (its ids, its task source, the bounds of `bounds.*`) so a bad one fails
 * here, before any workflow starts, and builds the batch workflow's input. The HTTP API and the
 * CLI both come through here.
 */
export async function buildBatchInput(config: Config, request: BatchSpec): Promise<BatchInput> {
  if (request.batchId !== undefined && !isSafeId(request.batchId)) throw new BatchRequestError(`batch id ${JSON.stringify(request.batchId)} is not valid: ${ID_RULE}`);
  const builtin = request.tasks === BUILTIN_TASKS;
  const requested = parseTaskSource(request.tasks);
  const path = builtin ? builtinPackDir() : await allowedTaskSource(config, requested.path);
  const report = await loadTaskReport(path, { format: requested.format });
  const tasks = report.tasks.map((t) => t.task);
  // The detected format travels in the source, so every worker reads the tasks the same way.
  const source = builtin ? BUILTIN_TASKS : formatTaskSource(report.format, path);
  const known = new Set(tasks.map((t) => t.instance_id));
  const taskIds = request.taskIds ?? tasks.map((t) => t.instance_id);
  const unknown = taskIds.filter((id) => !known.has(id));
  if (unknown.length > 0) throw new BatchRequestError(`unknown task ids in ${request.tasks}: ${unknown.join(', ')}`);
  if (taskIds.length === 0) throw new BatchRequestError(`${request.tasks} has no tasks`);
  const chosen = new Set(taskIds);
  const failures = await checkTasks(report.tasks.filter((t) => chosen.has(t.task.instance_id)));
  if (failures.length > 0) {
    const shown = failures.slice(0, 20).map(formatFailure);
    const more = failures.length > shown.length ? [`… and ${failures.length - shown.length} more`] : [];
    throw new BatchRequestError(`${request.tasks} fails its load-time checks:\n${[...shown, ...more].join('\n')}`);
  }
  if (request.agent !== 'builtin' && !isBlackBoxAgent(request.agent)) {
    throw new BatchRequestError(`unknown agent ${request.agent}; use builtin, ${blackBoxAgentNames().join(', ')}`);
  }
  const input: BatchInput = {
    batchId: request.batchId ?? `batch-${new Date().toISOString().replace(/[:.]/g, '-')}`,
    taskSource: source,
    taskIds,
    n: request.n,
    agentName: request.agent,
    concurrency: request.concurrency ?? config.batch.concurrency,
    filterUniformGroups: request.filterUniformGroups ?? config.batch.filterUniformGroups,
    limits: { ...episodeLimits(config), ...request.limits },
    sampling: { ...config.sampling, ...request.sampling },
    timeouts: { scheduleToStartMs: config.worker.scheduleToStartMs, cleanupWindowMs: config.worker.cleanupWindowMs },
    continueAfterEvents: config.batch.continueAfterEvents,
    maxStaleness: request.maxStaleness ?? null,
    staleAction: request.staleAction ?? 'drop',
  };
  const violation = boundViolation(input, config.bounds);
  if (violation) throw new BatchRequestError(violation);
  return input;
}

/**
 * Starts the batch workflow, whose workflow id is the batch id. Idempotent: starting an id that
 * is running or has ended answers the existing batch and starts nothing.
 */
export async function startBatch(client: Client, config: Config, input: BatchInput): Promise<WorkflowHandle<typeof batchWorkflow>> {
  try {
    return await client.workflow.start<typeof batchWorkflow>('batchWorkflow', {
      taskQueue: config.temporal.taskQueue,
      workflowId: input.batchId,
      args: [input],
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    });
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return client.workflow.getHandle<typeof batchWorkflow>(input.batchId);
    throw error;
  }
}

/**
 * Waits for the manifest (see `endedBatchManifest`), calling `onProgress` about once a second. A query needs a live worker
 * and may hang while none polls (one crashed, the next is starting), so each one is bounded and
 * never delays noticing the result. Aborting `signal` (default: none) cancels the wait's gRPC
 * calls and rejects: a call still in flight when its connection is closed would otherwise be
 * retried on the closed channel once it fails, and throw from a timer.
 */
export async function followBatch(
  handle: WorkflowHandle<typeof batchWorkflow>,
  onProgress: (p: BatchProgress) => void,
  intervalMs = 1_000,
  signal?: AbortSignal,
): Promise<BatchManifest> {
  const call = callSignal(signal);
  const result = handle.client.withAbortSignal(call.signal, () => endedBatchManifest(handle)).finally(call.dispose);
  let finished = false;
  const settled = result.then(
    () => (finished = true),
    () => (finished = true),
  );
  while (!finished) {
    const progress = await Promise.race([queryProgress(handle, Math.max(5_000, intervalMs), signal), settled.then(() => undefined)]);
    if (progress && !finished) onProgress(progress);
    await Promise.race([settled, wait(intervalMs)]);
  }
  return result;
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The batch's `progress` answer, or undefined when none comes within `timeoutMs` (no worker polls),
 * the query fails or `signal` (default: none) aborts. A query out of time is cancelled, not left
 * in flight where nobody waits for it.
 */
export function queryProgress(handle: WorkflowHandle<typeof batchWorkflow>, timeoutMs: number, signal?: AbortSignal): Promise<BatchProgress | undefined> {
  const call = callSignal(signal);
  let timer: ReturnType<typeof setTimeout> | undefined;
  // The timer is cleared with the answer: a finished caller is not kept alive until it fires.
  const timeout = new Promise<undefined>(
    (resolve) =>
      (timer = setTimeout(() => {
        call.abort();
        resolve(undefined);
      }, timeoutMs)),
  );
  const query = handle.client.withAbortSignal(call.signal, () => handle.query(progressQuery)).catch(() => undefined);
  return Promise.race([query, timeout]).finally(() => {
    clearTimeout(timer);
    call.dispose();
  });
}

/**
 * The signal of one gRPC call, aborted with `outer` (when given) or by `abort`. Temporal leaves a
 * listener on the signal each call runs under, so one long-lived signal would collect a listener
 * per call; this one goes with its call, and `dispose` unhooks it from `outer`.
 */
function callSignal(outer: AbortSignal | undefined): { signal: AbortSignal; abort: () => void; dispose: () => void } {
  const call = new AbortController();
  const abort = () => call.abort();
  if (outer?.aborted) abort();
  else outer?.addEventListener('abort', abort, { once: true });
  return { signal: call.signal, abort, dispose: () => outer?.removeEventListener('abort', abort) };
}

/** The closing summary of a batch: episodes, reward per task, turns, tokens, rates. */
export function formatSummary(manifest: BatchManifest, episodes: { taskId: string; turns: number; reward: number | null }[]): string {
  const lines: string[] = [];
  const ok = manifest.groups.reduce((s, g) => s + g.n_ok, 0);
  const failed = manifest.stats.episodes - ok;
  lines.push(`batch ${manifest.batch_id}: ${manifest.status}; ${ok} episodes ok, ${failed} failed`);
  lines.push('  task                         mean reward   rewards        group');
  for (const g of manifest.groups) {
    const rewards = g.rewards.filter((r): r is number => r !== null);
    const mean = rewards.length ? (rewards.reduce((a, b) => a + b, 0) / rewards.length).toFixed(2) : '-';
    lines.push(`  ${g.task_id.padEnd(28)} ${mean.padStart(11)}   ${g.rewards.map((r) => (r === null ? 'x' : String(r))).join(',').padEnd(14)} ${g.status}`);
  }
  const turns = episodes.map((e) => e.turns);
  const meanTurns = turns.length ? turns.reduce((a, b) => a + b, 0) / turns.length : 0;
  const perMinute = manifest.stats.wall_s > 0 ? (manifest.stats.episodes / manifest.stats.wall_s) * 60 : 0;
  lines.push(`  turns per episode: mean ${meanTurns.toFixed(1)}; chains ${manifest.stats.chains}; tokens ${manifest.stats.tokens}`);
  lines.push(`  wall time ${manifest.stats.wall_s.toFixed(1)} s; ${perMinute.toFixed(1)} episodes per minute`);
  const rows = manifest.files.reduce((sum, f) => sum + f.rows, 0);
  const folders = [...new Set(manifest.files.map((f) => path.dirname(fileURLToPath(f.uri))))];
  lines.push(`  trajectories: ${rows} rows in ${manifest.files.length} Arrow group files under ${folders.join(', ') || '-'}`);
  lines.push(`  as one file: npx rollout batch export ${manifest.batch_id} --out FILE`);
  return lines.join('\n');
}
