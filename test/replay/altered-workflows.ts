/**
 * The production workflows with one change that breaks determinism: the episode workflow now asks
 * for a sandbox before admission. Replaying recorded histories against this bundle must fail,
 * which proves the replay tests catch such changes.
 */
import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import type { EpisodeInput, EpisodeSummary } from '../../activities/types.js';
import { episodeWorkflow as original } from '../../workflows/episode.js';

export { batchWorkflow } from '../../workflows/batch.js';

const { createSandbox } = proxyActivities<Activities>({ startToCloseTimeout: '1 minute' });

export async function episodeWorkflow(input: EpisodeInput): Promise<EpisodeSummary> {
  await createSandbox({ episodeId: workflowInfo().workflowId, attempt: 0, taskSource: input.taskSource, taskId: input.taskId, agentName: input.agentName });
  return original(input);
}
