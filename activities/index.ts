import { ApplicationFailure, Context, sleep } from '@temporalio/activity';
import { removeAgentState, runAgentStep, type AgentStepResult } from '../agents/builtin/index.js';
import type { AdmissionControl, Lease } from '../scheduler/index.js';
import { SandboxError, type SandboxProvider } from '../sandbox/provider.js';
import { meteredSandbox } from '../sandbox/metered.js';
import { createMetrics, type RolloutMetrics } from '../telemetry/metrics.js';
import { Registry } from 'prom-client';
import type { ImageStore } from '../sandbox/images/types.js';
import {
  evaluateReward,
  JudgeConfigError,
  runnerMounts,
  workspaceDiff,
  type JudgeDeps,
  type JudgeEngine,
  type JudgePrices,
  type ScreenConfig,
} from '../tasks/reward/index.js';
import { taskSandboxSpec } from '../tasks/task-sandbox.js';
import { secretPathsOf } from '../tasks/secret-paths.js';
import { sessionTranscript, type ArtifactStore, type Store } from '../trajectory/index.js';
import type { SessionSummary } from '../gateway/session/session-manager.js';
import { agentSidecarMounts, isBlackBoxAgent } from '../agents/presets/index.js';
import {
  createBlackBoxAgentActivity,
  type RunAgentInput,
  type RunAgentResult,
} from './black-box-agent.js';
import { createBatchActivities } from './batch.js';
import { GatewayAdminClient } from './gateway-admin.js';
import { gatewaySessionId } from '../gateway/client/rendezvous.js';
import { GATEWAY_OUTAGE_DEFAULT_MS, GatewayOutageError } from '../gateway/client/outage.js';
import { createJanitorActivities } from './janitor.js';
import { recordEpisodeSpan } from '../telemetry/tracing.js';
import { tracedSandbox } from './traced-sandbox.js';
import { taskSourcePath, type TaskCatalog } from './task-catalog.js';
import { REWARD_TESTS_SHOWN, type EpisodeInput, type EpisodeOutcome, type RewardSummary, type SandboxRef } from './types.js';

export interface ActivityDeps {
  store: Store;
  admission: AdmissionControl;
  sandbox: SandboxProvider;
  /** Resolves tasks' images (the same store the sandbox provider pulls with). */
  images: ImageStore;
  tasks: TaskCatalog;
  /** The gateway replicas' base URLs (`gateway.urls`) and their admin token. */
  gateway: { urls: readonly string[]; adminToken: string };
  /**
   * How long the gateway may be unreachable before an activity that needs it ends the attempt
   * (`limits.gatewayOutageMs`), ms; until then its calls are repeated. Default 90000.
   */
  gatewayOutageMs?: number;
  /** Task queue served by this worker's host: activities touching its sandboxes go there. */
  hostQueue: string;
  /** Where the built-in agent keeps its per-episode state. */
  agentStateDir: string;
  /** Where group files are written (`<batchId>/groups/` under its root); readable from any host. */
  artifacts: ArtifactStore;
  /** Bytes of command output shown to the model. */
  maxOutputBytes: number;
  /** Time for one sandbox TTL: a sandbox outliving its episode by this much is swept. */
  sandboxTtlMs: number;
  /** Host directory a sandbox sees as `/tmp`, where the gateway bridge's socket goes. */
  sandboxTmpHostDir(sandboxId: string): string;
  /** Where black-box agents' stdout and stderr logs are kept. */
  agentLogDir: string;
  /** The janitor forgets a host not seen for this long, ms. */
  hostTtlMs: number;
  /**
   * The model judge of judge rewards and audits: the configured engines (activities/judge-engine.ts)
   * and the price per token (`judge.prices`). Default none: such tasks fail without retries.
   */
  judge?: { engine: JudgeEngine; prices: JudgePrices };
  /** The stack's `reward.screen` (tasks/reward/screen/). Default: on, every rule. */
  rewardScreen?: ScreenConfig;
  /**
   * Where sandbox operations, rewards, finished episodes and admission waits are counted
   * (telemetry/metrics.ts). Default: metrics on a registry of their own, which nothing exposes.
   */
  metrics?: RolloutMetrics;
}

/** A task asking for a judge this worker cannot run is not retried; an engine outage is. */
async function judgeCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof JudgeConfigError)
      throw ApplicationFailure.nonRetryable(error.message, error.name);
    throw error;
  }
}

/** Sandbox errors that can never succeed are not retried by Temporal. */
async function sandboxCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof SandboxError && !error.retryable) {
      throw ApplicationFailure.nonRetryable(error.message, error.name);
    }
    throw error;
  }
}

/**
 * A gateway gone for longer than its bound fails the activity for good: retrying it would only
 * wait the bound again, so the attempt ends now and the episode starts over.
 */
async function gatewayCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof GatewayOutageError)
      throw ApplicationFailure.nonRetryable(error.message, error.name);
    throw error;
  }
}

/**
 * Heartbeats while `fn` runs, so a dead worker is noticed within the heartbeat timeout rather
 * than the start-to-close timeout, and (given a lease) keeps the episode's admission alive.
 */
async function withHeartbeat<T>(
  fn: () => Promise<T>,
  lease?: { admission: AdmissionControl; lease: Lease },
): Promise<T> {
  const ctx = Context.current();
  const beat = () => {
    ctx.heartbeat();
    // A failed renewal is retried on the next beat; the lease outlives several beats.
    lease?.admission.renew(lease.lease).catch(() => undefined);
  };
  beat();
  const timer = setInterval(beat, 2_000);
  try {
    return await fn();
  } finally {
    clearInterval(timer);
  }
}

/** The graded tests a reward summary names: those not passed first, at most REWARD_TESTS_SHOWN. */
function shownTests(tests: RewardSummary['tests'] & object): NonNullable<RewardSummary['tests']> {
  const entries = Object.entries(tests).sort(([, a], [, b]) => Number(a === 'passed') - Number(b === 'passed'));
  return Object.fromEntries(entries.slice(0, REWARD_TESTS_SHOWN));
}

export function createActivities(given: ActivityDeps) {
  const metrics = given.metrics ?? createMetrics(new Registry(), { processMetrics: false });
  // Every activity, the janitor's and the agents' included, reaches the sandbox through this seam.
  const deps: ActivityDeps = { ...given, sandbox: tracedSandbox(meteredSandbox(given.sandbox, metrics.sandbox)) };
  const gatewayOutageMs = deps.gatewayOutageMs ?? GATEWAY_OUTAGE_DEFAULT_MS;
  const admin = new GatewayAdminClient({ ...deps.gateway, outageMs: gatewayOutageMs });
  const blackBox = createBlackBoxAgentActivity({
    sandbox: deps.sandbox,
    tasks: deps.tasks,
    gateway: deps.gateway,
    gatewayOutageMs,
    sandboxTmpHostDir: deps.sandboxTmpHostDir,
    logDir: deps.agentLogDir,
  });
  return {
    ...createJanitorActivities({
      sandbox: deps.sandbox,
      agentStateDir: deps.agentStateDir,
      store: deps.store,
      hostTtlMs: deps.hostTtlMs,
    }),

    /**
     * Waits for rollout capacity and returns the episode's home instance. The wait ends when the
     * episode is cancelled (the context's sleep throws), and a lease taken as the cancellation
     * arrives is given back, so a cancelled episode never keeps a slot.
     */
    async admitEpisode(input: { episodeId: string }): Promise<{ instance: string }> {
      const ctx = Context.current();
      let waited: (() => void) | undefined;
      try {
        for (;;) {
          const lease = await deps.admission.tryAdmit(input.episodeId);
          if (lease) {
            if (ctx.cancellationSignal.aborted) {
              await deps.admission.release(input.episodeId);
              throw ctx.cancellationSignal.reason;
            }
            return { instance: lease.instance };
          }
          waited ??= metrics.episodes.admissionWait();
          ctx.heartbeat();
          await sleep(250);
        }
      } finally {
        waited?.();
      }
    },

    async releaseEpisode(input: { episodeId: string }): Promise<void> {
      await deps.admission.release(input.episodeId);
    },

    /** Creates the agent's sandbox on this worker's host and says which queue reaches it. */
    async createSandbox(input: {
      episodeId: string;
      attempt: number;
      taskSource: string;
      taskId: string;
      agentName: string;
    }): Promise<SandboxRef> {
      const task = await deps.tasks.get(input.taskSource, input.taskId);
      const made = await taskSandboxSpec(task, 'agent', { images: deps.images });
      const info = await withHeartbeat(() =>
        sandboxCall(() =>
          deps.sandbox.create({
            idempotencyKey: `${input.episodeId}:${input.attempt}`,
            ...made,
            labels: { episode: input.episodeId, role: 'agent' },
            hiddenPaths: secretPathsOf(taskSourcePath(input.taskSource), task),
            ttlMs: deps.sandboxTtlMs,
            // Black-box agents run from a read-only sidecar, never installed into the task's files.
            readOnlyMounts: [
              ...(isBlackBoxAgent(input.agentName) ? agentSidecarMounts() : []),
              ...runnerMounts(task),
            ],
          }),
        ),
      );
      return { sandboxId: info.id, hostQueue: deps.hostQueue };
    },

    /** Removes what an attempt left on this host: its sandbox and the agent's state file. */
    async cleanupAttempt(input: {
      sandboxId: string;
      episodeId: string;
      attempt: number;
    }): Promise<void> {
      await deps.sandbox.destroy(input.sandboxId);
      await removeAgentState(deps.agentStateDir, input.episodeId, input.attempt);
    },

    async openSession(input: {
      episodeId: string;
      attempt: number;
      instance: string;
      episode: EpisodeInput;
    }): Promise<{ sessionId: string; key: string }> {
      const { episode } = input;
      const signal = Context.current().cancellationSignal;
      return withHeartbeat(() =>
        gatewayCall(() =>
          admin.openSession(
            {
              sessionId: gatewaySessionId(input.episodeId, input.attempt),
              episodeId: input.episodeId,
              attempt: input.attempt,
              info: {
                batchId: episode.batchId,
                taskId: episode.taskId,
                groupId: episode.groupId,
                episodeIndex: episode.episodeIndex,
                agentName: episode.agentName,
                homeInstance: input.instance,
                budgets: {
                  maxTurns: episode.limits.maxTurns,
                  maxContextTokens: episode.limits.maxContextTokens,
                  maxWallTimeMs: episode.limits.maxWallTimeMs,
                },
                sampling: episode.sampling,
              },
            },
            signal,
          ),
        ),
      );
    },

    /** One model call of the built-in agent and the tools it asked for. */
    async agentStep(input: {
      episodeId: string;
      attempt: number;
      instance: string;
      sandboxId: string;
      sessionKey: string;
      taskSource: string;
      taskId: string;
      commandTimeoutMs: number;
    }): Promise<AgentStepResult> {
      const task = await deps.tasks.get(input.taskSource, input.taskId);
      return withHeartbeat(
        () =>
          gatewayCall(() =>
            sandboxCall(() =>
              runAgentStep(
                { sandbox: deps.sandbox, stateDir: deps.agentStateDir },
                {
                  episodeId: input.episodeId,
                  attempt: input.attempt,
                  sandboxId: input.sandboxId,
                  gatewayUrls: deps.gateway.urls,
                  sessionKey: input.sessionKey,
                  problemStatement: task.problem_statement,
                  commandTimeoutMs: input.commandTimeoutMs,
                  maxOutputBytes: deps.maxOutputBytes,
                  gatewayOutageMs,
                  signal: Context.current().cancellationSignal,
                },
              ),
            ),
          ),
        {
          admission: deps.admission,
          lease: { episodeId: input.episodeId, instance: input.instance },
        },
      );
    },

    /** A black-box agent program, run whole in the sandbox (one long, heartbeating activity). */
    async runAgent(input: RunAgentInput & { instance: string }): Promise<RunAgentResult> {
      const { instance, ...run } = input;
      return withHeartbeat(() => blackBox.runAgent(run), {
        admission: deps.admission,
        lease: { episodeId: input.episodeId, instance },
      });
    },

    /**
     * Scores the agent's diff: the hidden tests or the verifier in a fresh sandbox, or the model
     * judge; an audit reads the episode's transcript from its gateway session in the store.
     */
    async computeReward(input: {
      episodeId: string;
      attempt: number;
      instance: string;
      sandboxId: string;
      taskSource: string;
      taskId: string;
    }): Promise<RewardSummary> {
      const task = await deps.tasks.get(input.taskSource, input.taskId);
      return withHeartbeat(
        async () => {
          // Read on this host and handed over in memory: a diff never rides in a Temporal payload.
          const changes = await sandboxCall(() => workspaceDiff(deps.sandbox, input.sandboxId));
          const judge: JudgeDeps | undefined = deps.judge && {
            ...deps.judge,
            records: deps.artifacts,
            transcript: () =>
              sessionTranscript(deps.store, gatewaySessionId(input.episodeId, input.attempt)),
          };
          const result = await judgeCall(() =>
            sandboxCall(() =>
              evaluateReward(
                { provider: deps.sandbox, images: deps.images, judge, screen: deps.rewardScreen },
                {
                  task,
                  agentDiff: changes.diff,
                  agentDiffRejected: changes.rejected,
                  idempotencyKey: `${input.episodeId}:${input.attempt}`,
                  labels: { episode: input.episodeId },
                },
              ),
            ),
          );
          metrics.episodes.reward(result.reward, result.resolved, result.reason);
          return {
            reward: result.reward,
            resolved: result.resolved,
            reason: result.reason,
            passed: result.passed,
            failed: result.failed,
            ...(result.suiteTests !== undefined ? { suiteTests: result.suiteTests } : {}),
            ...(result.suiteBroken?.length ? { suiteBroken: result.suiteBroken } : {}),
            ...(result.suiteSkipped !== undefined ? { suiteSkipped: result.suiteSkipped } : {}),
            ...(result.judge ? { judge: result.judge } : {}),
            canaries: result.canaries,
            tests: shownTests(result.tests),
            ...(result.screen?.length ? { screen: result.screen } : {}),
          };
        },
        {
          admission: deps.admission,
          lease: { episodeId: input.episodeId, instance: input.instance },
        },
      );
    },

    async closeSession(input: { sessionId: string; reason: string }): Promise<SessionSummary> {
      const signal = Context.current().cancellationSignal;
      return withHeartbeat(() =>
        gatewayCall(() => admin.closeSession(input.sessionId, input.reason, signal)),
      );
    },

    /** Writes the episode's outcome; its session's chains become its trajectory. */
    async finishEpisode(input: {
      episodeId: string;
      episode: EpisodeInput;
      sessionId: string | null;
      outcome: EpisodeOutcome;
      terminationReason: string;
      reward: RewardSummary | null;
      turns: number;
      toolCalls: number;
      tEpisodeS: number;
      tEnvS: number;
    }): Promise<void> {
      await deps.store.recordEpisode({
        episodeId: input.episodeId,
        batchId: input.episode.batchId,
        taskId: input.episode.taskId,
        groupId: input.episode.groupId,
        episodeIndex: input.episode.episodeIndex,
        agentName: input.episode.agentName,
        sessionId: input.sessionId,
        outcome: input.outcome,
        terminationReason: input.terminationReason,
        reward: input.reward?.reward ?? null,
        rewardInfo: input.reward ? { ...input.reward } : {},
        numTurns: input.turns,
        numToolCalls: input.toolCalls,
        tEpisodeS: input.tEpisodeS,
        tEnvS: input.tEnvS,
      });
      metrics.episodes.episode(input.outcome);
      // After the write: a retry after a failed write emits the span once, not twice.
      recordEpisodeSpan(input.episodeId, Date.now() - input.tEpisodeS * 1000, {
        'rollout.batch_id': input.episode.batchId,
        'rollout.task_id': input.episode.taskId,
        'rollout.agent': input.episode.agentName,
        'rollout.outcome': input.outcome,
        'rollout.turns': input.turns,
        ...(input.reward ? { 'rollout.reward': input.reward.reward } : {}),
      });
    },

    ...createBatchActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
