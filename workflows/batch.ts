import {
  condition,
  continueAsNew,
  executeChild,
  ParentClosePolicy,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type {
  BatchCarry,
  BatchInput,
  BatchManifest,
  BatchProgress,
  EpisodeInput,
  EpisodeSummary,
  GroupState,
  ManifestGroup,
} from '../activities/types.js';
import { episodeWorkflow } from './episode.js';
import { progressQuery } from './queries.js';
import { AgentName, BatchId, TaskId } from './search-attributes.js';

const control = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 10 },
});

/** Group ids may not contain `_`: trajectory ids are `{group_id}_{episode}_{chain}`. */
export function groupIdOf(batchId: string, taskIndex: number): string {
  return `${batchId.replace(/_/g, '-')}.g${taskIndex}`;
}

/** Episode workflow id: readable in the UI and stable, so a restarted batch never duplicates one. */
export function episodeIdOf(batchId: string, taskId: string, sample: number): string {
  return `${batchId}/${taskId}/${sample}`;
}

function manifestGroups(input: BatchInput, groups: GroupState[]): ManifestGroup[] {
  return groups.map((g) => {
    const ok = g.rewards.filter((r): r is number => r !== null);
    const uniform = ok.length > 0 && ok.every((r) => r === ok[0]);
    const status = ok.length === 0 ? 'failure' : input.filterUniformGroups && uniform ? 'filtered' : 'finished';
    return { group_id: g.groupId, task_id: g.taskId, n_requested: input.n, n_ok: ok.length, status, rewards: g.rewards, failures: g.failures };
  });
}

/**
 * A trainer's batch: `n` episodes per task as child workflows, at most `concurrency` at once.
 * Each child costs the batch a handful of history events, so after `continueAfterEvents` the run
 * stops launching, lets its running children finish, and continues as new carrying only per-group
 * rewards; the final run exports the trajectories and returns the manifest.
 */
export async function batchWorkflow(input: BatchInput, carry?: BatchCarry): Promise<BatchManifest> {
  const total = input.taskIds.length * input.n;
  const state: BatchCarry = carry ?? {
    nextIndex: 0,
    startedAtMs: Date.now(),
    episodesOk: 0,
    tokens: 0,
    groups: input.taskIds.map((taskId, i) => ({
      groupId: groupIdOf(input.batchId, i),
      taskId,
      rewards: new Array<number | null>(input.n).fill(null),
      failures: [],
    })),
  };
  let running = 0;
  let done = state.groups.reduce((sum, g) => sum + g.failures.length, 0) + state.episodesOk;
  setHandler(progressQuery, (): BatchProgress => {
    const rewards = state.groups.flatMap((g) => g.rewards).filter((r): r is number => r !== null);
    return {
      batchId: input.batchId,
      total,
      started: state.nextIndex,
      running,
      done,
      ok: state.episodesOk,
      infraErrors: done - state.episodesOk,
      meanReward: rewards.length ? rewards.reduce((a, b) => a + b, 0) / rewards.length : null,
    };
  });

  const record = (taskIndex: number, sample: number, result: EpisodeSummary | { failure: string }) => {
    const group = state.groups[taskIndex]!;
    if ('failure' in result || result.outcome !== 'ok') {
      group.failures.push({ episode_index: sample, reason: 'failure' in result ? result.failure : result.reason });
    } else {
      group.rewards[sample] = result.reward;
      state.episodesOk += 1;
      state.tokens += result.tokens;
    }
    done += 1;
  };

  const launch = async (index: number) => {
    const taskIndex = Math.floor(index / input.n);
    const sample = index % input.n;
    const taskId = input.taskIds[taskIndex]!;
    const episode: EpisodeInput = {
      batchId: input.batchId,
      groupId: state.groups[taskIndex]!.groupId,
      taskSource: input.taskSource,
      taskId,
      episodeIndex: sample,
      agentName: input.agentName,
      limits: input.limits,
      sampling: input.sampling,
    };
    running += 1;
    try {
      const result = await executeChild(episodeWorkflow, {
        args: [episode],
        workflowId: episodeIdOf(input.batchId, taskId, sample),
        parentClosePolicy: ParentClosePolicy.TERMINATE,
        typedSearchAttributes: [
          { key: BatchId, value: input.batchId },
          { key: TaskId, value: taskId },
          { key: AgentName, value: input.agentName },
        ],
      });
      record(taskIndex, sample, result);
    } catch (error) {
      record(taskIndex, sample, { failure: `infra_error: ${String((error as Error).message ?? error).slice(0, 300)}` });
    } finally {
      running -= 1;
    }
  };

  const eventBudget = input.continueAfterEvents ?? 8_000;
  while (state.nextIndex < total && workflowInfo().historyLength < eventBudget) {
    await condition(() => running < input.concurrency);
    void launch(state.nextIndex);
    state.nextIndex += 1;
  }
  await condition(() => running === 0);
  if (state.nextIndex < total) await continueAsNew<typeof batchWorkflow>(input, state);

  const groups = manifestGroups(input, state.groups);
  const exported = await control.exportBatch({
    batchId: input.batchId,
    groupIds: groups.filter((g) => g.status === 'finished').map((g) => g.group_id),
  });
  return {
    schema: 'agent-rollout/v1',
    batch_id: input.batchId,
    status: state.episodesOk === total ? 'complete' : 'partial',
    groups,
    files: exported.files,
    stats: { episodes: total, chains: exported.chains, tokens: state.tokens, wall_s: (Date.now() - state.startedAtMs) / 1000 },
  };
}
