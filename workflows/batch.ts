import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  condition,
  continueAsNew,
  executeChild,
  isCancellation,
  ParentClosePolicy,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { GROUP_EXPORT_INCOMPLETE, type GroupExportIncompleteDetails } from './export-failures.js';
import type {
  BatchCarry,
  BatchManifest,
  BatchProgress,
  BatchRequest,
  EpisodeInput,
  EpisodeSummary,
  FinishedGroupsAnswer,
  GroupStatus,
  ManifestFile,
  OpenGroup,
} from '../activities/types.js';
import { isStale, MAX_GROUPS_PER_ANSWER, MAX_STALE_RERUNS, resolveBatchRequest } from './batch-request.js';
import { episodeWorkflow } from './episode.js';
import { manifestQuery, progressQuery } from './queries.js';
import { AgentName, BatchId, Outcome, TaskId } from './search-attributes.js';
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

/** The episodes a failed export names (its details), else null: every ok episode of the group. */
function missingEpisodes(error: ActivityFailure): string[] | null {
  const cause = error.cause;
  if (cause instanceof ApplicationFailure && cause.type === GROUP_EXPORT_INCOMPLETE) {
    const details = cause.details?.[0] as GroupExportIncompleteDetails | undefined;
    if (details && Array.isArray(details.missingEpisodeIds)) return details.missingEpisodeIds;
  }
  return null;
}

/** Groups no sample of which started, recorded by one call when a batch is cancelled. */
const UNSTARTED_GROUPS_PER_CALL = 500;

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

function groupStatus(group: OpenGroup, filterUniform: boolean): Exclude<GroupStatus, 'export_failed'> {
  if (group.ok === 0) return 'failure';
  return filterUniform && group.uniform ? 'filtered' : 'finished';
}

/**
 * A trainer's batch: `n` episodes per task as child workflows, at most `concurrency` at once.
 * Each sample's ending (reward or failure) is recorded in the store as it ends; the workflow
 * keeps counts, cursors and the groups still open, never a list as long as the batch. When every
 * sample of a group has ended, the group's rows go to their own Arrow file, the group is
 * recorded at its finish position and handed to `finishedGroups` callers (read back from the
 * store). Each child costs the batch a handful of history events, so after `continueAfterEvents`
 * the run stops launching, lets its running children and exports finish, and continues as new
 * with the counts; the last run returns the manifest, assembled from the store. A cancelled batch
 * cancels its episodes, ends the groups with what they have, and ends cancelled: its `cancelled`
 * manifest is the answer of the `manifest` query.
 */
export async function batchWorkflow(request: BatchRequest, carry?: BatchCarry): Promise<BatchManifest> {
  const input = resolveBatchRequest(request, workflowInfo().workflowId);
  const { batchId, n } = input;
  const tasks = input.taskIds.length;
  const total = tasks * n;
  const state: BatchCarry = carry ?? {
    nextIndex: 0,
    startedAtMs: Date.now(),
    episodesOk: 0,
    episodesFailed: 0,
    rewardSum: 0,
    tokens: 0,
    stale: 0,
    exportFailed: 0,
    groupsFinished: 0,
    open: [],
  };
  const open = new Map(state.open.map((g) => [g.taskIndex, g]));
  let running = 0;
  let finishing = 0;
  /** Groups recorded in the store at finish positions 0..listed-1: how far the cursor reaches. */
  let listed = state.groupsFinished;
  /** Positions recorded past `listed` (groups finishing out of order); as many as groups finishing at once. */
  const recordedAhead = new Set<number>();
  /** This run hands over no more groups: the batch ended, or the run is about to continue as new. */
  let closing = false;
  let ended = false;
  let manifest: BatchManifest | null = null;

  /** Shown in the Temporal UI as the batch's current details while it runs. */
  const showProgress = () => {
    const done = state.episodesOk + state.episodesFailed;
    setCurrentDetails(`**${done} / ${total}** episodes ended (${state.episodesOk} ok, ${state.episodesFailed} failed), ${running} running; ${listed} / ${tasks} groups finished`);
  };

  showProgress();
  setHandler(progressQuery, (): BatchProgress => ({
    batchId,
    total,
    started: state.nextIndex,
    running,
    done: state.episodesOk + state.episodesFailed,
    ok: state.episodesOk,
    infraErrors: state.episodesFailed,
    queued: total - state.episodesOk - state.episodesFailed - running,
    startedAtMs: state.startedAtMs,
    meanReward: state.episodesOk ? state.rewardSum / state.episodesOk : null,
    groupsFinished: listed,
    stale: state.stale,
    exportFailed: state.exportFailed,
  }));
  setHandler(manifestQuery, () => manifest);

  setHandler(
    finishedGroupsUpdate,
    async ({ after }): Promise<FinishedGroupsAnswer> => {
      await condition(() => listed > after || closing);
      const reach = listed;
      // Not cancellable: a cancelled batch still hands over the groups that finished.
      const groups = after < reach ? await CancellationScope.nonCancellable(() => control.batchGroups({ batchId, after, maxGroups: Math.min(MAX_GROUPS_PER_ANSWER, reach - after) })) : [];
      const next = after + groups.length;
      return { groups, next, done: ended && next >= listed };
    },
    {
      validator: (arg) => {
        const after = (arg as { after?: unknown } | null)?.after;
        if (!Number.isInteger(after) || (after as number) < 0) throw new Error('finishedGroups needs {"after": n} with n a non-negative integer');
      },
    },
  );

  const openGroup = (taskIndex: number): OpenGroup => {
    let group = open.get(taskIndex);
    if (!group) {
      group = { taskIndex, ended: 0, ok: 0, firstReward: null, uniform: true };
      open.set(taskIndex, group);
    }
    return group;
  };

  /** A group whose samples have all ended: its status, its file, its finish position, recorded in the store. */
  const finishGroup = async (group: OpenGroup) => {
    open.delete(group.taskIndex);
    finishing += 1;
    try {
      // Not cancellable: a cancelled batch still hands over the groups that finished.
      await CancellationScope.nonCancellable(async () => {
        const groupId = groupIdOf(batchId, group.taskIndex);
        let status: GroupStatus = groupStatus(group, input.filterUniformGroups);
        let file: ManifestFile | null = null;
        let missingEpisodeIds: string[] | null = [];
        if (status === 'finished') {
          try {
            file = await exporter.exportGroup({ batchId, groupId });
          } catch (error) {
            if (!(error instanceof ActivityFailure)) throw error;
            status = 'export_failed';
            missingEpisodeIds = missingEpisodes(error);
            state.exportFailed += 1;
          }
        }
        const seq = state.groupsFinished;
        state.groupsFinished += 1;
        await control.finishBatchGroup({ batchId, groupId, taskId: input.taskIds[group.taskIndex]!, seq, nRequested: n, status, file, missingEpisodeIds });
        recordedAhead.add(seq);
        while (recordedAhead.delete(listed)) listed += 1;
      });
    } finally {
      finishing -= 1;
    }
    showProgress();
  };

  /** Records a sample's ending in the store, then in the counts; the group's last sample finishes it. */
  const record = async (taskIndex: number, sample: number, episodeId: string, ending: Ending) => {
    const reward = 'reward' in ending ? ending.reward : null;
    const failure = 'failure' in ending ? ending.failure : null;
    await CancellationScope.nonCancellable(() => control.recordBatchResult({ batchId, groupId: groupIdOf(batchId, taskIndex), sample, episodeId, reward, failure }));
    const group = openGroup(taskIndex);
    group.ended += 1;
    if ('failure' in ending) {
      state.episodesFailed += 1;
    } else {
      state.episodesOk += 1;
      state.rewardSum += ending.reward;
      state.tokens += ending.tokens;
      group.ok += 1;
      if (group.firstReward === null) group.firstReward = ending.reward;
      else if (group.firstReward !== ending.reward) group.uniform = false;
    }
    showProgress();
    if (group.ended === n) void finishGroup(group);
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
    const taskIndex = Math.floor(index / n);
    const sample = index % n;
    const taskId = input.taskIds[taskIndex]!;
    const episode: EpisodeInput = {
      batchId,
      groupId: groupIdOf(batchId, taskIndex),
      taskSource: input.taskSource,
      taskId,
      episodeIndex: sample,
      agentName: input.agentName,
      limits: input.limits,
      sampling: input.sampling,
      timeouts: input.timeouts,
    };
    running += 1;
    try {
      for (let reruns = 0; ; reruns++) {
        const episodeId = episodeIdOf(batchId, taskId, sample, reruns);
        let ending: Ending | 'rerun';
        try {
          const summary = await executeChild(episodeWorkflow, {
            args: [episode],
            workflowId: episodeId,
            parentClosePolicy: ParentClosePolicy.TERMINATE,
            // What the batch's timeline shows for this child.
            staticSummary: `${taskId} sample ${sample}${reruns ? ` (stale re-run ${reruns})` : ''}`,
            // `Outcome` from the start: the episode sets its final value.
            typedSearchAttributes: [
              { key: BatchId, value: batchId },
              { key: TaskId, value: taskId },
              { key: AgentName, value: input.agentName },
              { key: Outcome, value: 'running' },
            ],
          });
          ending = summary.outcome === 'ok' ? await judge(summary, reruns) : { failure: summary.reason };
        } catch (error) {
          ending = { failure: isCancellation(error) ? 'cancelled' : `infra_error: ${String((error as Error).message ?? error).slice(0, 300)}` };
        }
        if (ending !== 'rerun') {
          await record(taskIndex, sample, episodeId, ending);
          return;
        }
      }
    } finally {
      running -= 1;
    }
  };

  /** After a cancellation: every sample that never started ends `cancelled` (it has no row in the store). */
  const endUnstarted = async () => {
    const partial = state.nextIndex % n;
    if (partial !== 0) {
      const group = openGroup(Math.floor(state.nextIndex / n));
      group.ended += n - partial;
      state.episodesFailed += n - partial;
      void finishGroup(group);
    }
    await condition(() => finishing === 0);
    const firstUnstarted = Math.ceil(state.nextIndex / n);
    state.episodesFailed += (tasks - firstUnstarted) * n;
    for (let t = firstUnstarted; t < tasks; t += UNSTARTED_GROUPS_PER_CALL) {
      const groups = input.taskIds.slice(t, t + UNSTARTED_GROUPS_PER_CALL).map((taskId, i) => ({ groupId: groupIdOf(batchId, t + i), taskId }));
      await control.finishUnstartedGroups({ batchId, groups, firstSeq: state.groupsFinished, nRequested: n });
      state.groupsFinished += groups.length;
      listed = state.groupsFinished;
    }
    state.nextIndex = total;
  };

  let cancelled = false;
  try {
    while (state.nextIndex < total && workflowInfo().historyLength < input.continueAfterEvents) {
      await condition(() => running < input.concurrency);
      void launch(state.nextIndex);
      state.nextIndex += 1;
    }
    await condition(() => running === 0 && finishing === 0);
  } catch (error) {
    if (!isCancellation(error)) throw error;
    cancelled = true;
  }

  if (cancelled) {
    await CancellationScope.nonCancellable(async () => {
      // Cancelled episodes end as failures `cancelled`; so do samples never started.
      await condition(() => running === 0);
      await endUnstarted();
    });
  } else if (state.nextIndex < total) {
    closing = true;
    await condition(allHandlersFinished);
    await continueAsNew<typeof batchWorkflow>(input, { ...state, open: [...open.values()] });
  }

  showProgress();
  manifest = await CancellationScope.nonCancellable(() =>
    control.batchManifest({
      summary: {
        schema: 'agent-rollout/v1',
        batch_id: batchId,
        status: cancelled ? 'cancelled' : state.episodesOk === total && !state.exportFailed ? 'complete' : 'partial',
        stats: { episodes: total, chains: 0, tokens: state.tokens, wall_s: (Date.now() - state.startedAtMs) / 1000, stale: state.stale, export_failed: state.exportFailed },
      },
    }),
  );
  ended = true;
  closing = true;
  await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
  // A cancelled batch ends cancelled in Temporal; its manifest stays the `manifest` query's answer.
  if (cancelled) throw new CancelledFailure(`batch ${batchId} cancelled; its manifest is the answer of the manifest query`);
  return manifest;
}
