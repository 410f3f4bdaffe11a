import { WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import type { BatchManifest, BatchProgress, FinishedGroupsAnswer } from '../activities/types.js';
import { BatchRequestError, buildBatchInput, queryProgress, startBatch, type BatchSpec } from '../stack/batches.js';
import { endedBatchManifest } from '../stack/batch-manifest.js';
import type { Config } from '../stack/config.js';
import type { ArtifactStore } from '../trajectory/index.js';
import { TaskLoadError } from '../tasks/loader.js';
import { MAX_GROUPS_PER_ANSWER } from '../workflows/batch-request.js';
import type { batchWorkflow } from '../workflows/batch.js';
import { finishedGroupsUpdate } from '../workflows/updates.js';
import { BatchNotFoundError, BatchStateError, InvalidRequestError } from './errors.js';

/** Interval between progress queries of a long-poll: cheap (no history events), and quick enough. */
const POLL_MS = 250;
/** Longest wait for a query answer; a query needs a live worker. */
const QUERY_TIMEOUT_MS = 5_000;

export type BatchRunStatus = 'running' | 'completed' | 'failed' | 'cancelled' | 'terminated' | 'timed_out' | 'unknown';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The batch workflows as the HTTP API sees them: start, describe, hand over groups, cancel. */
export class BatchService {
  constructor(
    private readonly client: Client,
    private readonly config: Config,
    /** Where the manifests too large for a workflow result are (`manifest_uri`). */
    private readonly artifacts: ArtifactStore,
  ) {}

  private handle(batchId: string): WorkflowHandle<typeof batchWorkflow> {
    return this.client.workflow.getHandle<typeof batchWorkflow>(batchId);
  }

  /** Validates the tasks, then starts the batch (or finds the one with that id). */
  async start(spec: BatchSpec): Promise<string> {
    try {
      const input = await buildBatchInput(this.config, spec);
      await startBatch(this.client, this.config, input);
      return input.batchId;
    } catch (error) {
      if (error instanceof BatchRequestError || error instanceof TaskLoadError) throw new InvalidRequestError(error.message);
      throw error;
    }
  }

  /** The batch workflow's status (of its latest run). */
  async status(batchId: string): Promise<BatchRunStatus> {
    try {
      const description = await this.handle(batchId).describe();
      const name = description.status.name.toLowerCase();
      if (name === 'continued_as_new') return 'running';
      return (['running', 'completed', 'failed', 'cancelled', 'terminated', 'timed_out'] as const).find((s) => s === name) ?? 'unknown';
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) throw new BatchNotFoundError(batchId);
      throw error;
    }
  }

  /** Live progress, or undefined when no worker answered in time. */
  progress(batchId: string): Promise<BatchProgress | undefined> {
    return queryProgress(this.handle(batchId), QUERY_TIMEOUT_MS);
  }

  /** The manifest of a batch that has ended (completed or cancelled), whole. */
  async manifest(batchId: string): Promise<BatchManifest> {
    const status = await this.status(batchId);
    if (status !== 'completed' && status !== 'cancelled') throw new BatchStateError(`batch ${batchId} ended without a manifest (${status})`);
    return endedBatchManifest(this.handle(batchId), this.artifacts);
  }

  /**
   * The answer of the `finishedGroups` update for cursor `after`, waiting at most `timeoutS` for a
   * group past it. While the batch runs, progress queries (no history events) tell when a group is
   * there; only then is the update sent, so it answers at once and no handler is left waiting in
   * the workflow after an HTTP client gave up. An ended batch answers from its manifest.
   */
  async finishedGroups(batchId: string, after: number, timeoutS: number): Promise<FinishedGroupsAnswer> {
    const deadline = Date.now() + timeoutS * 1000;
    for (;;) {
      const status = await this.status(batchId);
      if (status === 'completed' || status === 'cancelled') {
        const manifest = await this.manifest(batchId);
        const groups = manifest.groups.slice(after, after + MAX_GROUPS_PER_ANSWER);
        const next = after + groups.length;
        return { groups, next, done: next >= manifest.groups.length };
      }
      if (status !== 'running') throw new BatchStateError(`batch ${batchId} ended without a manifest (${status})`);
      const progress = await this.progress(batchId);
      if (progress && progress.groupsFinished > after) {
        const answer = await this.handle(batchId)
          .executeUpdate(finishedGroupsUpdate, { args: [{ after }] })
          .catch(() => undefined);
        // No answer: the run ended or continued as new meanwhile; look again.
        if (answer && (answer.groups.length > 0 || answer.done)) return answer;
      }
      if (Date.now() >= deadline) return { groups: [], next: after, done: false };
      await sleep(Math.min(POLL_MS, Math.max(0, deadline - Date.now())));
    }
  }

  /** Every group finished so far, in finish order. */
  async allFinishedGroups(batchId: string): Promise<FinishedGroupsAnswer['groups']> {
    const groups: FinishedGroupsAnswer['groups'] = [];
    for (;;) {
      const answer = await this.finishedGroups(batchId, groups.length, 0);
      groups.push(...answer.groups);
      if (answer.groups.length === 0 || answer.done) return groups;
    }
  }

  /** Requests cancellation: running episodes are cancelled and the manifest says `cancelled`. */
  async cancel(batchId: string): Promise<void> {
    const status = await this.status(batchId);
    if (status !== 'running') throw new BatchStateError(`batch ${batchId} is ${status}, not running`);
    await this.handle(batchId).cancel();
  }
}
