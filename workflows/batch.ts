import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  executeChild,
  isCancellation,
  ParentClosePolicy,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { GROUP_EXPORT_INCOMPLETE, type GroupExportIncompleteDetails } from './export-failures.js';
import type {
  BatchCarry,
  BatchInput,
  BatchManifest,
  BatchProgress,
  BatchRequest,
  EpisodeInput,
  EpisodeSummary,
  FinishedGroup,
  FinishedGroupsAnswer,
  GroupState,
  GroupStatus,
} from '../activities/types.js';
import { isStale, MAX_GROUPS_PER_ANSWER, MAX_STALE_RERUNS, resolveBatchRequest } from './batch-request.js';
import { episodeWorkflow } from './episode.js';
import { progressQuery } from './queries.js';
import { AgentName, BatchId, TaskId } from './search-attributes.js';
import { finishedGroupsUpdate } from './updates.js';

/**
 * Quick control calls, idempotent (a group's file is rewritten whole). Writing one group's file
 * takes seconds, so a worker that dies meanwhile delays the group by the timeout, not by minutes.
 */
const control = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 10 },
});
/**
 * A group's export, checked against the store: retried a few times (a flaky artifact store), then
 * the group is reported `export_failed` instead of stalling the batch.
 */
const exporter = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 5 },
});

/** The episodes a failed export names (its details), else all it was asked for. */
function missingEpisodes(error: ActivityFailure, asked: string[]): string[] {
  const cause = error.cause;
  if (cause instanceof ApplicationFailure && cause.type === GROUP_EXPORT_INCOMPLETE) {
    const details = cause.details?.[0] as GroupExportIncompleteDetails | undefined;
    if (details && Array.isArray(details.missingEpisodeIds)) return details.missingEpisodeIds;
  }
  return asked;
}

/** Group ids may not contain `_`: trajectory ids are `{group_id}_{episode}_{chain}`. */
export function groupIdOf(batchId: string, taskIndex: number): string {
  return `${batchId.replace(/_/g, '-')}.g${taskIndex}`;
}

/**
 * Episode workflow id: readable in the UI and stable, so a restarted batch never duplicates one.
 * A stale episode's re-run `k` gets its own id, `.../<sample>.r<k>`.
 */
export function episodeIdOf(batchId: string, taskId: string, sample: number, rerun = 0): string {
  const id = `${batchId}/${taskId}/${sample}`;
  return rerun === 0 ? id : `${id}.r${rerun}`;
}

/** Why a sample failed, when the outcome is not a reward. */
type Ending = { reward: number; tokens: number } | { failure: string };

function groupStatus(group: GroupState, filterUniform: boolean): GroupStatus {
  const ok = group.rewards.filter((r): r is number => r !== null);
  if (ok.length === 0) return 'failure';
  return filterUniform && ok.every((r) => r === ok[0]) ? 'filtered' : 'finished';
}

function finishedGroup(input: BatchInput, g: GroupState): FinishedGroup {
  const missing = g.status === 'export_failed' ? { missing_episode_ids: g.missingEpisodeIds ?? [] } : {};
  return {
    group_id: g.groupId,
    task_id: g.taskId,
    n_requested: input.n,
    n_ok: g.rewards.filter((r) => r !== null).length,
    status: g.status ?? groupStatus(g, input.filterUniformGroups),
    rewards: g.rewards,
    failures: g.failures,
    ...missing,
    file: g.file,
  };
}

/**
 * A trainer's batch: `n` episodes per task as child workflows, at most `concurrency` at once.
 * When every sample of a group has ended, the group's rows go to their own Arrow file and the
 * group is handed to `finishedGroups` callers at once. Each child costs the batch a handful of
 * history events, so after `continueAfterEvents` the run stops launching, lets its running
 * children and exports finish, and continues as new carrying the per-group state; the last run
 * returns the manifest. A cancelled batch cancels its episodes, ends the groups with what they
 * have, and returns a `cancelled` manifest.
 */
export async function batchWorkflow(request: BatchRequest, carry?: BatchCarry): Promise<BatchManifest> {
  const input = resolveBatchRequest(request, workflowInfo().workflowId);
  const total = input.taskIds.length * input.n;
  const state: BatchCarry = carry ?? {
    nextIndex: 0,
    startedAtMs: Date.now(),
    episodesOk: 0,
    tokens: 0,
    stale: 0,
    finishedOrder: [],
    groups: input.taskIds.map((taskId, i) => ({
      groupId: groupIdOf(input.batchId, i),
      taskId,
      rewards: new Array<number | null>(input.n).fill(null),
      failures: [],
      reruns: {},
      status: null,
      file: null,
    })),
  };
  let running = 0;
  let exporting = 0;
  /** This run hands over no more groups: the batch ended, or the run is about to continue as new. */
  let closing = false;
  let ended = false;
  const done = () => state.groups.reduce((sum, g) => sum + g.failures.length, 0) + state.episodesOk;

  setHandler(progressQuery, (): BatchProgress => {
    const rewards = state.groups.flatMap((g) => g.rewards).filter((r): r is number => r !== null);
    const finished = done();
    return {
      batchId: input.batchId,
      total,
      started: state.nextIndex,
      running,
      done: finished,
      ok: state.episodesOk,
      infraErrors: finished - state.episodesOk,
      meanReward: rewards.length ? rewards.reduce((a, b) => a + b, 0) / rewards.length : null,
      groupsFinished: state.finishedOrder.length,
      stale: state.stale,
      exportFailed: state.exportFailed ?? 0,
    };
  });

  setHandler(
    finishedGroupsUpdate,
    async ({ after }): Promise<FinishedGroupsAnswer> => {
      await condition(() => state.finishedOrder.length > after || closing);
      const groups = state.finishedOrder.slice(after, after + MAX_GROUPS_PER_ANSWER).map((i) => finishedGroup(input, state.groups[i]!));
      const next = after + groups.length;
      return { groups, next, done: ended && next >= state.finishedOrder.length };
    },
    {
      validator: (arg) => {
        const after = (arg as { after?: unknown } | null)?.after;
        if (!Number.isInteger(after) || (after as number) < 0) throw new Error('finishedGroups needs {"after": n} with n a non-negative integer');
      },
    },
  );

  /** A group whose samples have all ended: its status, its file, its place in the cursor. */
  const finishGroup = async (taskIndex: number) => {
    const group = state.groups[taskIndex]!;
    let status = groupStatus(group, input.filterUniformGroups);
    if (status === 'finished') {
      const episodeIds = group.rewards.flatMap((r, sample) => (r === null ? [] : [episodeIdOf(input.batchId, group.taskId, sample, group.reruns[sample] ?? 0)]));
      exporting += 1;
      try {
        // Not cancellable: a cancelled batch still hands over the groups that finished.
        group.file = await CancellationScope.nonCancellable(() => exporter.exportGroup({ batchId: input.batchId, groupId: group.groupId, episodeIds }));
      } catch (error) {
        if (!(error instanceof ActivityFailure)) throw error;
        status = 'export_failed';
        group.missingEpisodeIds = missingEpisodes(error, episodeIds);
        state.exportFailed = (state.exportFailed ?? 0) + 1;
      } finally {
        exporting -= 1;
      }
    }
    group.status = status;
    state.finishedOrder.push(taskIndex);
  };

  const record = (taskIndex: number, sample: number, ending: Ending) => {
    const group = state.groups[taskIndex]!;
    if ('failure' in ending) {
      group.failures.push({ episode_index: sample, reason: ending.failure });
    } else {
      group.rewards[sample] = ending.reward;
      state.episodesOk += 1;
      state.tokens += ending.tokens;
    }
    if (group.rewards.filter((r) => r !== null).length + group.failures.length === input.n) void finishGroup(taskIndex);
  };

  /** How an ok episode counts: its reward, or stale (dropped, or re-run while re-runs are left). */
  const judge = async (summary: EpisodeSummary, reruns: number): Promise<Ending | 'rerun'> => {
    if (input.maxStaleness !== null && summary.minVersion !== null) {
      const { version } = await control.policyVersion();
      if (isStale(summary.minVersion, version, input.maxStaleness)) {
        state.stale += 1;
        if (input.staleAction === 'rerun' && reruns < MAX_STALE_RERUNS) return 'rerun';
        return { failure: `stale: min_version ${summary.minVersion}, policy version ${version}, max staleness ${input.maxStaleness}` };
      }
    }
    return { reward: summary.reward ?? 0, tokens: summary.tokens };
  };

  const launch = async (index: number) => {
    const taskIndex = Math.floor(index / input.n);
    const sample = index % input.n;
    const group = state.groups[taskIndex]!;
    const episode: EpisodeInput = {
      batchId: input.batchId,
      groupId: group.groupId,
      taskSource: input.taskSource,
      taskId: group.taskId,
      episodeIndex: sample,
      agentName: input.agentName,
      limits: input.limits,
      sampling: input.sampling,
      timeouts: input.timeouts,
    };
    running += 1;
    try {
      for (;;) {
        const reruns = group.reruns[sample] ?? 0;
        let ending: Ending | 'rerun';
        try {
          const summary = await executeChild(episodeWorkflow, {
            args: [episode],
            workflowId: episodeIdOf(input.batchId, group.taskId, sample, reruns),
            parentClosePolicy: ParentClosePolicy.TERMINATE,
            typedSearchAttributes: [
              { key: BatchId, value: input.batchId },
              { key: TaskId, value: group.taskId },
              { key: AgentName, value: input.agentName },
            ],
          });
          ending = summary.outcome === 'ok' ? await judge(summary, reruns) : { failure: summary.reason };
        } catch (error) {
          ending = { failure: isCancellation(error) ? 'cancelled' : `infra_error: ${String((error as Error).message ?? error).slice(0, 300)}` };
        }
        if (ending !== 'rerun') {
          record(taskIndex, sample, ending);
          return;
        }
        group.reruns[sample] = reruns + 1;
      }
    } finally {
      running -= 1;
    }
  };

  let cancelled = false;
  try {
    while (state.nextIndex < total && workflowInfo().historyLength < input.continueAfterEvents) {
      await condition(() => running < input.concurrency);
      void launch(state.nextIndex);
      state.nextIndex += 1;
    }
    await condition(() => running === 0 && exporting === 0);
  } catch (error) {
    if (!isCancellation(error)) throw error;
    cancelled = true;
  }

  if (cancelled) {
    await CancellationScope.nonCancellable(async () => {
      // Cancelled episodes end as failures `cancelled`; samples never started end the same way.
      await condition(() => running === 0);
      for (let index = state.nextIndex; index < total; index++) record(Math.floor(index / input.n), index % input.n, { failure: 'cancelled' });
      state.nextIndex = total;
      await condition(() => exporting === 0);
    });
  } else if (state.nextIndex < total) {
    closing = true;
    await condition(allHandlersFinished);
    await continueAsNew<typeof batchWorkflow>(input, state);
  }

  ended = true;
  closing = true;
  const groups = state.finishedOrder.map((i) => finishedGroup(input, state.groups[i]!));
  const files = groups.flatMap((g) => (g.file ? [g.file] : []));
  const manifest: BatchManifest = {
    schema: 'agent-rollout/v1',
    batch_id: input.batchId,
    status: cancelled ? 'cancelled' : state.episodesOk === total && !state.exportFailed ? 'complete' : 'partial',
    groups,
    files,
    stats: {
      episodes: total,
      chains: files.reduce((sum, f) => sum + f.rows, 0),
      tokens: state.tokens,
      wall_s: (Date.now() - state.startedAtMs) / 1000,
      stale: state.stale,
      export_failed: state.exportFailed ?? 0,
    },
  };
  await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
  return manifest;
}
