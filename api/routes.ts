import { GatewayAdminError, type GatewayAdminClient } from '../activities/gateway-admin.js';
import type { BatchProgress } from '../activities/types.js';
import type { BatchSpec } from '../stack/batches.js';
import type { Config } from '../stack/config.js';
import { randomUUID } from 'node:crypto';
import type { ArtifactStore, BatchDataStore } from '../trajectory/index.js';
import type { BatchService } from './batch-service.js';
import { CorruptFileError, GatewayForwardError, IncompleteDataError, ReportNotFoundError, UnknownGroupError, UnknownTrajectoryError } from './errors.js';
import { GroupFileMismatchError, groupsStream, IncompleteGroupsError, readGroupBatches } from './group-data.js';
import { consistencyFigures } from './logprob-report.js';
import { recordedTrajectories } from './recorded-rows.js';
import { defineRoute, type RouteSpec } from './route.js';
import * as S from './schemas.js';

export interface RouteDeps {
  config: Config;
  batches: BatchService;
  /** Acknowledgements and log-prob reports, shared by every API process. */
  store: BatchDataStore;
  /** Where the group files are. */
  artifacts: ArtifactStore;
  gateway: GatewayAdminClient;
}

/** Group data read for an answer; the file errors become the API's own. */
async function groupData<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof IncompleteGroupsError) throw new IncompleteDataError(error.message);
    if (error instanceof GroupFileMismatchError) throw new CorruptFileError(error.message);
    throw error;
  }
}

/** Where a stored report is served. */
function reportUri(batchId: string, reportId: string): string {
  return `/v1/batches/${encodeURIComponent(batchId)}/logprobs/${reportId}`;
}

/** Media type of an Arrow IPC stream. */
export const ARROW_STREAM = 'application/vnd.apache.arrow.stream';

function progressOut(p: BatchProgress) {
  return {
    batch_id: p.batchId,
    total: p.total,
    started: p.started,
    running: p.running,
    done: p.done,
    ok: p.ok,
    infra_errors: p.infraErrors,
    queued: p.queued,
    mean_reward: p.meanReward,
    groups_finished: p.groupsFinished,
    stale: p.stale,
    export_failed: p.exportFailed ?? 0,
  };
}

function specOf(config: Config, body: S.CreateBatchBody): BatchSpec {
  const l = body.limits ?? {};
  const s = body.sampling ?? {};
  const defined = <T extends object>(o: T): Partial<T> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
  return {
    batchId: body.batch_id,
    tasks: body.tasks ?? config.batch.tasks,
    taskIds: body.task_ids,
    n: body.n ?? config.batch.n,
    agent: body.agent ?? config.agent.name,
    concurrency: body.concurrency,
    filterUniformGroups: body.filter_uniform_groups,
    maxStaleness: body.max_staleness,
    staleAction: body.stale_action,
    limits: defined({ maxTurns: l.max_turns, maxContextTokens: l.max_context_tokens, maxWallTimeMs: l.max_wall_time_ms, maxInfraAttempts: l.max_infra_attempts, commandTimeoutMs: l.command_timeout_ms }),
    sampling: defined({
      temperature: s.temperature,
      topP: s.top_p,
      topK: s.top_k,
      minP: s.min_p,
      presencePenalty: s.presence_penalty,
      frequencyPenalty: s.frequency_penalty,
      repetitionPenalty: s.repetition_penalty,
      maxTokens: s.max_tokens,
      logprobsMode: s.logprobs_mode,
    }),
  };
}

async function forward<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof GatewayAdminError) throw new GatewayForwardError(error.status, error.message);
    throw new GatewayForwardError(502, `gateway unreachable: ${(error as Error).message}`);
  }
}

/** Every route of the API, in the order the OpenAPI document lists them. */
export function apiRoutes(deps: RouteDeps): RouteSpec[] {
  const { batches, store, artifacts, gateway } = deps;
  return [
    defineRoute({
      method: 'POST',
      url: '/v1/batches',
      summary: 'Start a batch (idempotent on batch_id)',
      description: 'Validates the tasks and starts the batch workflow, whose workflow id is the batch id. Starting an existing batch id again starts nothing and answers the same id.',
      body: S.CreateBatchBody,
      status: 202,
      answer: S.CreateBatchAnswer,
      handler: async ({ body }) => ({ batch_id: await batches.start(specOf(deps.config, body)) }),
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/batches/:id',
      summary: 'Status, progress, and the manifest once the batch has ended',
      params: S.BatchParams,
      answer: S.BatchStatusAnswer,
      handler: async ({ params }) => {
        const status = await batches.status(params.id);
        const progress = await batches.progress(params.id);
        return {
          batch_id: params.id,
          status,
          progress: progress ? progressOut(progress) : null,
          manifest: status === 'completed' || status === 'cancelled' ? await batches.manifest(params.id) : null,
          acked_group_ids: await store.ackedGroups(params.id),
          logprob_reports: (await store.listReports(params.id)).map((r) => reportUri(params.id, r.reportId)),
        };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/batches/:id/groups',
      summary: 'Long-poll for finished groups past a cursor (the finishedGroups update)',
      description: 'Answers as soon as a group past `after` has finished or the batch has ended, else after `timeout_s` with no groups and the same cursor.',
      params: S.BatchParams,
      query: S.GroupsQuery,
      answer: S.GroupsAnswer,
      handler: ({ params, query }) => batches.finishedGroups(params.id, query.after, query.timeout_s),
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/batches/:id/data',
      summary: 'The rows of finished groups as one Arrow IPC stream',
      params: S.BatchParams,
      query: S.DataQuery,
      answer: { contentType: ARROW_STREAM, description: 'Arrow IPC stream of trajectory rows (the columns of specs/trajectory.md)' },
      handler: async ({ params, query }, reply) => {
        let groups = await batches.allFinishedGroups(params.id);
        if (query.group_id !== undefined) {
          const wanted = [query.group_id].flat();
          const unknown = wanted.filter((id) => !groups.some((g) => g.group_id === id));
          if (unknown.length > 0) throw new UnknownGroupError(params.id, unknown);
          groups = groups.filter((g) => wanted.includes(g.group_id));
        }
        if (query.unacked === 'true') {
          const acked = new Set(await store.ackedGroups(params.id));
          groups = groups.filter((g) => !acked.has(g.group_id));
        }
        reply.header('content-type', ARROW_STREAM);
        return Buffer.from(await groupData(() => groupsStream(artifacts, groups)));
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/batches/:id/ack',
      summary: 'Acknowledge groups the trainer has consumed',
      description:
        'Records the groups as consumed (in the shared store). `GET /data?unacked=true` then leaves them out, and their files may be deleted by a later clean-up; nothing is deleted now.',
      params: S.BatchParams,
      body: S.AckBody,
      answer: S.AckAnswer,
      handler: async ({ params, body }) => {
        const finished = new Set((await batches.allFinishedGroups(params.id)).map((g) => g.group_id));
        const unknown = body.group_ids.filter((id) => !finished.has(id));
        if (unknown.length > 0) throw new UnknownGroupError(params.id, unknown);
        return { batch_id: params.id, acked_group_ids: await store.ackGroups(params.id, body.group_ids) };
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/batches/:id/cancel',
      summary: 'Cancel a running batch',
      description: 'Cancels the batch workflow and its running episodes; groups end with what they have and the manifest status is `cancelled`.',
      params: S.BatchParams,
      status: 202,
      answer: S.CancelAnswer,
      handler: async ({ params }) => {
        await batches.cancel(params.id);
        return { batch_id: params.id, status: 'cancel_requested' as const };
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/batches/:id/logprobs',
      summary: "Training-inference consistency: compare the trainer's log-probs with the rollout's",
      description:
        'Compares, on sampled tokens, the probabilities the trainer recomputed with those the engine reported: Pearson correlation, mean/max/std absolute difference, and the worst trajectories. Only tokens recorded at the temperature and log-prob mode the trainer states (`temperature`, `logprobs_mode`) are compared; every other group is reported separately in `groups`. The report is stored with the batch, listed by GET /v1/batches/{id} and served at its `report_uri`.',
      params: S.BatchParams,
      body: S.LogprobsBody,
      answer: S.LogprobReport,
      handler: async ({ params, body }) => {
        const wanted = new Set(body.trajectories.map((t) => t.trajectory_id));
        const groups = await batches.allFinishedGroups(params.id);
        const recorded = recordedTrajectories(await groupData(() => readGroupBatches(artifacts, groups)), wanted);
        const unknown = [...wanted].filter((id) => !recorded.has(id));
        if (unknown.length > 0) throw new UnknownTrajectoryError(params.id, unknown);
        const figures = consistencyFigures(recorded, body.trajectories, body.top_k, { temperature: body.temperature, logprobs_mode: body.logprobs_mode });
        const createdAt = new Date();
        const reportId = randomUUID();
        const report: S.LogprobReport = { batch_id: params.id, report_uri: reportUri(params.id, reportId), created_at: createdAt.toISOString(), ...figures };
        await store.saveReport({ reportId, batchId: params.id, createdAt: createdAt.getTime(), json: JSON.stringify(report) });
        return report;
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/batches/:id/logprobs/:report_id',
      summary: 'A stored log-prob consistency report',
      params: S.ReportParams,
      answer: S.LogprobReport,
      handler: async ({ params }) => {
        const stored = await store.getReport(params.report_id);
        if (!stored || stored.batchId !== params.id) throw new ReportNotFoundError(params.id, params.report_id);
        return JSON.parse(stored.json) as S.LogprobReport;
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/policy',
      summary: 'The policy version and whether generation is paused (forwarded to the gateway)',
      answer: S.PolicyState,
      handler: () => forward(() => gateway.policy()),
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/policy/pause',
      summary: 'Pause generation before a weight update; answers once the gateway is quiescent',
      description: '`finish` lets in-flight turns complete; `abort` aborts in-flight generations and keeps their partial tokens for resumption. New model calls wait until resume.',
      body: S.PauseBody,
      answer: S.PauseAnswer,
      handler: ({ body }) => forward(() => gateway.pausePolicy(body.mode)),
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/policy/resume',
      summary: 'Resume generation with a policy version (at least the current one)',
      body: S.ResumeBody,
      answer: S.PolicyState,
      handler: ({ body }) => forward(() => gateway.resumePolicy(body.version)),
    }),
  ];
}
