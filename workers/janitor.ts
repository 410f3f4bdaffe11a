/**
 * The sandbox janitor's schedule and host registry. One Temporal Schedule per task queue, id
 * `<taskQueue>-sandbox-janitor`, starts `janitorWorkflow` every `intervalMs`; the workflow reads
 * the hosts to sweep from the store, where every worker registers its host queue when it starts
 * and again every `registerEveryMs` while it runs. Every worker, when it starts, sweeps its own
 * host (what a crashed predecessor left), registers, and creates or updates the schedule; all
 * idempotent.
 */
import { Client, ScheduleAlreadyRunning, ScheduleOverlapPolicy, type ConnectionLike } from '@temporalio/client';
import { isEpisodeOpen, sweepThisHost, type JanitorSweepResult } from '../activities/janitor.js';
import type { SandboxProvider } from '../sandbox/provider.js';
import type { RegistryStore } from '../trajectory/index.js';

export function janitorScheduleId(taskQueue: string): string {
  return `${taskQueue}-sandbox-janitor`;
}

export interface JanitorOptions {
  /** This host's sandboxes. */
  provider: SandboxProvider;
  /** This host's built-in agent state directory. */
  agentStateDir: string;
  /** Where this host registers. */
  store: Pick<RegistryStore, 'register'>;
  /** This worker's host id (the registration's address). */
  hostId: string;
  /** How often the janitor sweeps every host, ms. Default 60 s. */
  intervalMs?: number;
  /** How often this host renews its registration, ms; well below `janitor.hostTtlMs`. Default 30 s. */
  registerEveryMs?: number;
}

const DEFAULT_INTERVAL_MS = 60_000;
const DEFAULT_REGISTER_EVERY_MS = 30_000;

/** Creates the janitor schedule, or sets its interval and action (older schedules named their hosts in the action). */
export async function ensureJanitorSchedule(client: Client, options: { taskQueue: string; intervalMs?: number }): Promise<void> {
  const scheduleId = janitorScheduleId(options.taskQueue);
  const spec = { intervals: [{ every: options.intervalMs ?? DEFAULT_INTERVAL_MS }] };
  const action = {
    type: 'startWorkflow' as const,
    workflowType: 'janitorWorkflow',
    workflowId: `${scheduleId}-run`,
    taskQueue: options.taskQueue,
    args: [],
    workflowExecutionTimeout: '30 minutes',
  };
  try {
    await client.schedule.create({ scheduleId, spec, action, policies: { overlap: ScheduleOverlapPolicy.SKIP } });
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
    await client.schedule.getHandle(scheduleId).update((previous) => ({ ...previous, spec, action }));
  }
}

/** Registers this host queue in the store now and every `everyMs` until `stop()`. */
export async function registerHost(
  store: Pick<RegistryStore, 'register'>,
  host: { hostQueue: string; hostId: string },
  everyMs = DEFAULT_REGISTER_EVERY_MS,
): Promise<{ stop(): void }> {
  const register = () => store.register({ kind: 'host', id: host.hostQueue, address: host.hostId, lastSeenAt: Date.now() });
  await register();
  // A failed renewal is retried on the next tick; the TTL outlasts many ticks.
  const timer = setInterval(() => void register().catch(() => undefined), everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

export interface JanitorHandle {
  /** What the start-up sweep removed. */
  swept: JanitorSweepResult;
  /** Ends this host's registration renewals (the worker is shutting down). */
  stop(): void;
}

/**
 * What a worker does before it polls: sweep what its host's predecessor left (expired, half-made,
 * and sandboxes and agent state of closed episodes), register the host, and make sure the
 * schedule runs.
 */
export async function startJanitor(
  connection: ConnectionLike,
  namespace: string,
  queues: { taskQueue: string; hostQueue: string },
  options: JanitorOptions,
): Promise<JanitorHandle> {
  const client = new Client({ connection, namespace });
  const swept = await sweepThisHost({ sandbox: options.provider, agentStateDir: options.agentStateDir }, (episodeId) => isEpisodeOpen(client, episodeId));
  const registration = await registerHost(options.store, { hostQueue: queues.hostQueue, hostId: options.hostId }, options.registerEveryMs);
  try {
    await ensureJanitorSchedule(client, { taskQueue: queues.taskQueue, intervalMs: options.intervalMs });
  } catch (error) {
    registration.stop();
    throw error;
  }
  return { swept, stop: registration.stop };
}
