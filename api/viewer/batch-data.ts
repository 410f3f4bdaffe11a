import type { Client } from '@temporalio/client';
import type { BatchProgress } from '../../activities/types.js';
import type { BatchGroupRecord, EpisodeRecord, EpisodeStore, BatchDataStore } from '../../trajectory/index.js';
import { Tokens } from '../../workflows/search-attributes.js';
import type { BatchService } from '../batch-service.js';

/** Batches the list page shows: the most recently started. */
export const LISTED_BATCHES = 50;
/** Most finished groups the batch page reads (a batch's group count is bounded far below it). */
const MAX_GROUPS = 100_000;

export interface BatchSummary {
  batchId: string;
  /** The batch workflow's status, lower case (`running`, `completed`, ...). */
  status: string;
  startedAt: Date | null;
  /** From the workflow's progress query; null when no worker answered. */
  progress: BatchProgress | null;
}

/** The most recently started batch workflows, each with its live progress. */
export async function listBatches(client: Client, batches: BatchService): Promise<BatchSummary[]> {
  const found: { batchId: string; status: string; startedAt: Date | null }[] = [];
  for await (const w of client.workflow.list({ query: 'WorkflowType = "batchWorkflow"', pageSize: LISTED_BATCHES })) {
    found.push({ batchId: w.workflowId, status: w.status.name.toLowerCase(), startedAt: w.startTime ?? null });
    if (found.length >= LISTED_BATCHES) break;
  }
  return Promise.all(found.map(async (b) => ({ ...b, progress: (await batches.progress(b.batchId)) ?? null })));
}

/** Per episode of a batch, the tokens its workflow reported (the `Tokens` search attribute). */
export async function episodeTokens(client: Client, batchId: string): Promise<Map<string, number>> {
  const tokens = new Map<string, number>();
  // Batch ids are of a safe charset (workflows/ids.ts), so quoting them cannot break the query.
  for await (const w of client.workflow.list({ query: `WorkflowType = "episodeWorkflow" AND BatchId = "${batchId}"` })) {
    const value = w.typedSearchAttributes.get(Tokens);
    if (value !== undefined) tokens.set(w.workflowId, value);
  }
  return tokens;
}

export interface BatchView {
  episodes: EpisodeRecord[];
  groups: BatchGroupRecord[];
}

/** What the store holds of a batch: its ended episodes and its finished groups. */
export async function batchView(store: EpisodeStore & BatchDataStore, batchId: string): Promise<BatchView> {
  const [episodes, groups] = await Promise.all([store.listEpisodes(batchId), store.listBatchGroups(batchId, 0, MAX_GROUPS)]);
  return { episodes, groups };
}
