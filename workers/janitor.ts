/**
 * The sandbox janitor's schedule: one Temporal Schedule per task queue, id
 * `<taskQueue>-sandbox-janitor`, starting `janitorWorkflow` every `intervalMs` with the host
 * queues it knows. Every worker, when it starts, sweeps its own host (what a crashed predecessor
 * left) and then creates the schedule or adds its host queue to it; both are idempotent.
 */
import {
  Client,
  ScheduleAlreadyRunning,
  ScheduleOverlapPolicy,
  type ConnectionLike,
} from '@temporalio/client';
import { isEpisodeOpen, sweepSandboxes, type JanitorSweepResult } from '../activities/janitor.js';
import type { SandboxProvider } from '../sandbox/provider.js';
import type { JanitorInput } from '../workflows/janitor.js';

export function janitorScheduleId(taskQueue: string): string {
  return `${taskQueue}-sandbox-janitor`;
}

export interface JanitorOptions {
  /** This host's sandboxes. */
  provider: SandboxProvider;
  /** How often the janitor sweeps every host. Default 60 s. */
  intervalMs?: number;
}

const DEFAULT_INTERVAL_MS = 60_000;

/** Creates the janitor schedule, or adds `hostQueue` to it and sets its interval. */
export async function ensureJanitorSchedule(
  client: Client,
  options: { taskQueue: string; hostQueue: string; intervalMs?: number },
): Promise<void> {
  const scheduleId = janitorScheduleId(options.taskQueue);
  const every = options.intervalMs ?? DEFAULT_INTERVAL_MS;
  const action = (hostQueues: string[]) => ({
    type: 'startWorkflow' as const,
    workflowType: 'janitorWorkflow',
    workflowId: `${scheduleId}-run`,
    taskQueue: options.taskQueue,
    args: [{ hostQueues } satisfies JanitorInput],
    workflowExecutionTimeout: '30 minutes',
  });
  const handle = client.schedule.getHandle(scheduleId);
  // Two workers starting at once may both update; the loser's host is re-added on the next pass.
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      await client.schedule.create({
        scheduleId,
        spec: { intervals: [{ every }] },
        action: action([options.hostQueue]),
        policies: { overlap: ScheduleOverlapPolicy.SKIP },
      });
      return;
    } catch (error) {
      if (!(error instanceof ScheduleAlreadyRunning)) throw error;
    }
    await handle.update((previous) => {
      const known = (previous.action.args?.[0] as JanitorInput | undefined)?.hostQueues ?? [];
      const hostQueues = [...new Set([...known, options.hostQueue])].sort();
      return { ...previous, spec: { intervals: [{ every }] }, action: action(hostQueues) };
    });
    const args = (await handle.describe()).action;
    const hostQueues =
      args.type === 'startWorkflow' ? (args.args?.[0] as JanitorInput | undefined)?.hostQueues : [];
    if (hostQueues?.includes(options.hostQueue)) return;
  }
  throw new Error(`could not add ${options.hostQueue} to schedule ${scheduleId}`);
}

/**
 * What a worker does before it polls: sweep what its host's predecessor left (expired, half-made,
 * and sandboxes of closed episodes), then make sure the schedule sweeps this host from now on.
 */
export async function startJanitor(
  connection: ConnectionLike,
  namespace: string,
  queues: { taskQueue: string; hostQueue: string },
  options: JanitorOptions,
): Promise<JanitorSweepResult> {
  const client = new Client({ connection, namespace });
  const swept = await sweepSandboxes(options.provider, (episodeId) =>
    isEpisodeOpen(client, episodeId),
  );
  await ensureJanitorSchedule(client, { ...queues, intervalMs: options.intervalMs });
  return swept;
}
