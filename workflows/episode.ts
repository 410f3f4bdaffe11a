import {
  ActivityCancellationType,
  ActivityFailure,
  CancellationScope,
  isCancellation,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { EpisodeInput, EpisodeStatus, EpisodeSummary, EpisodeTimeouts, RewardSummary, SandboxRef } from '../activities/types.js';
import { EPISODE_TIMEOUT_DEFAULTS } from './episode-timeouts.js';
import { builtinTermination } from './builtin-termination.js';
import { statusQuery } from './queries.js';
import { Outcome, Reward, Tokens, Turns } from './search-attributes.js';

/**
 * Activities on the shared queue: quick control calls, safe to retry (each is idempotent by
 * episode id). Admission waits for capacity, so it heartbeats instead of timing out.
 */
const control = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 10 },
});
/**
 * Opening and closing the gateway session (idempotent by session id) wait through a gateway
 * restart, heartbeating, for up to the worker's `limits.gatewayOutageMs`; past it they fail for
 * good (not retried) and the attempt ends. Other failures retry as the control calls do.
 */
const sessions = proxyActivities<Activities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '20 seconds',
  retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 10 },
});
/**
 * A cancelled episode waits for its admission wait to end (the activity sees the cancellation at
 * its next heartbeat, within about 8 s): only then does its release run, so a lease taken in that
 * window is released too and never outlives the episode.
 */
const admission = proxyActivities<Activities>({
  startToCloseTimeout: '24 hours',
  heartbeatTimeout: '10 seconds',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: { initialInterval: '1s', maximumInterval: '30s' },
});
/**
 * Sandbox creation may fail for passing reasons (host busy, injected faults): retry with backoff.
 * Idempotent by episode id + attempt, so a retry after a lost answer finds the same sandbox. It
 * heartbeats, so a worker that dies while copying a large workspace is noticed in seconds.
 */
const sandboxes = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '20 seconds',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 5 },
});

/**
 * Activities on the sandbox's own host queue. An agent step changes the sandbox, so it is retried
 * only after the step itself recorded what ran (see agents/builtin/step.ts); the reward builds a
 * fresh sandbox each try. A host that never picks the work up fails the attempt after the
 * schedule-to-start timeout; a dead worker is noticed by the missing heartbeat.
 */
function hostActivities(hostQueue: string, timeouts: EpisodeTimeouts) {
  return {
    work: proxyActivities<Activities>({
      taskQueue: hostQueue,
      scheduleToStartTimeout: timeouts.scheduleToStartMs,
      startToCloseTimeout: '15 minutes',
      heartbeatTimeout: '20 seconds',
      retry: { initialInterval: '1s', maximumInterval: '10s', maximumAttempts: 3 },
    }),
    /** Destroy is idempotent; if the host is gone for good, the sandbox's TTL removes it. */
    cleanup: proxyActivities<Activities>({
      taskQueue: hostQueue,
      scheduleToCloseTimeout: timeouts.cleanupWindowMs,
      startToCloseTimeout: '30 seconds',
      retry: { initialInterval: '1s', maximumAttempts: 5 },
    }),
  };
}

/** Patch id of the `Outcome` upsert of a cancelled episode. */
const OUTCOME_CANCELLED_PATCH = 'outcome-cancelled';

/** The agent that runs one activity per model call (see agents/builtin). */
const BUILTIN_AGENT = 'builtin';

/**
 * A black-box agent program runs as one activity for the whole episode. It changes the sandbox
 * and cannot resume where it stopped, so it is never retried in place: a failure (a dead worker
 * noticed by the missing heartbeat) restarts the episode attempt with a fresh sandbox.
 */
function blackBoxActivities(hostQueue: string, agentTimeoutMs: number, timeouts: EpisodeTimeouts) {
  return proxyActivities<Activities>({
    taskQueue: hostQueue,
    scheduleToStartTimeout: timeouts.scheduleToStartMs,
    startToCloseTimeout: agentTimeoutMs + 120_000,
    heartbeatTimeout: '30 seconds',
    retry: { maximumAttempts: 1 },
  });
}

/** Failures of the machinery (sandbox, worker, gateway), as opposed to the agent doing badly. */
function isInfraFailure(error: unknown): error is ActivityFailure {
  return error instanceof ActivityFailure;
}

function describe(error: unknown): string {
  if (error instanceof ActivityFailure) {
    const cause = error.cause as { message?: string } | undefined;
    return `${error.activityType}: ${cause?.message ?? error.message}`.slice(0, 300);
  }
  return String(error).slice(0, 300);
}

/**
 * One agent episode: admission, sandbox, gateway session, the agent, reward in a fresh sandbox,
 * session close, sandbox destroy. An infrastructure failure restarts the attempt (new sandbox, new
 * session; the old chains are never exported) up to `limits.maxInfraAttempts`; after that the
 * episode ends as `infra_error`, never as a reward of 0.
 */
export async function episodeWorkflow(input: EpisodeInput): Promise<EpisodeSummary> {
  const episodeId = workflowInfo().workflowId;
  const startedAt = Date.now();
  const status: EpisodeStatus = { phase: 'admitting', attempt: 0, instance: null, turns: 0, toolCalls: 0, outcome: null, reward: null };
  setHandler(statusQuery, () => status);

  let lastError = '';
  // Admission is inside the try: an episode cancelled while waiting, or just after it got a slot,
  // still releases its lease (release is idempotent).
  try {
    const { instance } = await admission.admitEpisode({ episodeId });
    status.instance = instance;
    for (let attempt = 0; attempt < input.limits.maxInfraAttempts; attempt++) {
      status.attempt = attempt;
      try {
        return await runAttempt(input, episodeId, attempt, instance, status, startedAt);
      } catch (error) {
        if (!isInfraFailure(error)) throw error;
        lastError = describe(error);
      }
    }
    await control.finishEpisode({
      episodeId,
      episode: input,
      sessionId: null,
      outcome: 'infra_error',
      terminationReason: 'infra_error',
      reward: null,
      turns: 0,
      toolCalls: 0,
      tEpisodeS: (Date.now() - startedAt) / 1000,
      tEnvS: 0,
    });
    status.phase = 'done';
    status.outcome = 'infra_error';
    upsertSearchAttributes([{ key: Outcome, value: 'infra_error' }]);
    return {
      episodeId,
      groupId: input.groupId,
      episodeIndex: input.episodeIndex,
      outcome: 'infra_error',
      reward: null,
      reason: `infra_error: ${lastError}`,
      turns: 0,
      tokens: 0,
      attempts: input.limits.maxInfraAttempts,
      minVersion: null,
      maxVersion: null,
    };
  } catch (error) {
    // The batch starts an episode with `Outcome` running; a cancelled one says so. Histories
    // recorded before this have no such upsert, hence the patch.
    if (isCancellation(error) && patched(OUTCOME_CANCELLED_PATCH)) upsertSearchAttributes([{ key: Outcome, value: 'cancelled' }]);
    throw error;
  } finally {
    await CancellationScope.nonCancellable(() => control.releaseEpisode({ episodeId }));
  }
}

async function runAttempt(
  input: EpisodeInput,
  episodeId: string,
  attempt: number,
  instance: string,
  status: EpisodeStatus,
  startedAt: number,
): Promise<EpisodeSummary> {
  status.phase = 'creating_sandbox';
  const sandbox: SandboxRef = await sandboxes.createSandbox({ episodeId, attempt, taskSource: input.taskSource, taskId: input.taskId, agentName: input.agentName });
  // Inputs recorded before `timeouts` existed take the values that were fixed then.
  const timeouts = input.timeouts ?? EPISODE_TIMEOUT_DEFAULTS;
  const host = hostActivities(sandbox.hostQueue, timeouts);
  let sessionId: string | undefined;
  try {
    const session = await sessions.openSession({ episodeId, attempt, instance, episode: input });
    sessionId = session.sessionId;
    status.phase = 'agent';
    let envSeconds = 0;
    let reason = 'max_turns';
    if (input.agentName === BUILTIN_AGENT) {
      // One more step than turns: the gateway answers the step past the budget with a final message.
      for (let step = 0; step <= input.limits.maxTurns; step++) {
        const result = await host.work.agentStep({
          episodeId,
          attempt,
          instance,
          sandboxId: sandbox.sandboxId,
          sessionKey: session.key,
          taskSource: input.taskSource,
          taskId: input.taskId,
          commandTimeoutMs: input.limits.commandTimeoutMs,
        });
        status.turns = result.turns;
        status.toolCalls = result.toolCalls;
        envSeconds = result.envSeconds;
        if (result.done) {
          reason = builtinTermination(result.reason);
          break;
        }
      }
    } else {
      const result = await blackBoxActivities(sandbox.hostQueue, input.limits.maxWallTimeMs, timeouts).runAgent({
        episodeId,
        attempt,
        instance,
        sandboxId: sandbox.sandboxId,
        sessionKey: session.key,
        agentName: input.agentName,
        taskSource: input.taskSource,
        taskId: input.taskId,
        timeoutMs: input.limits.maxWallTimeMs,
        maxContextTokens: input.limits.maxContextTokens,
      });
      reason = result.timedOut ? 'timeout' : result.exitCode === 0 ? 'stop' : 'agent_error';
    }
    status.phase = 'reward';
    const reward: RewardSummary = await host.work.computeReward({ episodeId, attempt, instance, sandboxId: sandbox.sandboxId, taskSource: input.taskSource, taskId: input.taskId });
    status.phase = 'closing';
    const summary = await sessions.closeSession({ sessionId, reason });
    const terminationReason = summary.terminationReason ?? reason;
    await control.finishEpisode({
      episodeId,
      episode: input,
      sessionId,
      outcome: 'ok',
      terminationReason,
      reward,
      turns: summary.turns,
      toolCalls: summary.toolCalls,
      tEpisodeS: (Date.now() - startedAt) / 1000,
      tEnvS: envSeconds,
    });
    status.phase = 'done';
    status.outcome = 'ok';
    status.reward = reward.reward;
    upsertSearchAttributes([
      { key: Outcome, value: 'ok' },
      { key: Reward, value: reward.reward },
      { key: Turns, value: summary.turns },
      { key: Tokens, value: summary.tokens },
    ]);
    sessionId = undefined;
    return {
      episodeId,
      groupId: input.groupId,
      episodeIndex: input.episodeIndex,
      outcome: 'ok',
      reward: reward.reward,
      reason: terminationReason,
      turns: summary.turns,
      tokens: summary.tokens,
      attempts: attempt + 1,
      // Summaries recorded before policy versions (older histories) have none.
      minVersion: summary.minVersion ?? null,
      maxVersion: summary.maxVersion ?? null,
    };
  } finally {
    await CancellationScope.nonCancellable(async () => {
      // A session left open by a failed attempt is closed so its key stops working; its chains
      // stay in the store but no episode points at them.
      if (sessionId) await sessions.closeSession({ sessionId, reason: 'infra_error' }).catch(() => undefined);
      await host.cleanup.cleanupAttempt({ sandboxId: sandbox.sandboxId, episodeId, attempt }).catch(() => undefined);
    });
  }
}
