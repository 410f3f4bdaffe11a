/**
 * The production batch workflow with a scripted episode workflow in place of the real one: each
 * episode ends at once with the policy versions and reward its id says. The batch's own logic
 * (staleness, groups, the finishedGroups update across continue-as-new) runs on a real Temporal
 * server without sandboxes or engines.
 */
import { sleep, workflowInfo } from '@temporalio/workflow';
import type { EpisodeInput, EpisodeSummary } from '../../activities/types.js';

export { batchWorkflow } from '../../workflows/batch.js';

/** First runs were sampled by version 0; re-runs (`.r<k>` ids) by version 10. Rewards alternate by sample. */
export async function episodeWorkflow(input: EpisodeInput): Promise<EpisodeSummary> {
  const episodeId = workflowInfo().workflowId;
  const version = /\.r\d+$/.test(episodeId) ? 10 : 0;
  // Later tasks take longer, so groups finish over time.
  await sleep(50 + 20 * Number(input.groupId.split('.g')[1]));
  return {
    episodeId,
    groupId: input.groupId,
    episodeIndex: input.episodeIndex,
    outcome: 'ok',
    reward: input.episodeIndex % 2,
    reason: 'stop',
    turns: 1,
    tokens: 10,
    attempts: 1,
    minVersion: version,
    maxVersion: version,
  };
}
