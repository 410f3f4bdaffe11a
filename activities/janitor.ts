/**
 * The janitor's activity, run on each host's queue: removes the host's sandboxes (with their
 * mounts and cgroups) whose TTL has passed, half-made ones, and those whose episode is closed,
 * i.e. whose episode workflow is no longer running.
 */
import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { SandboxProvider } from '../sandbox/provider.js';

/** The label that ties a sandbox to its episode: the episode workflow's id. */
export const EPISODE_LABEL = 'episode';

export interface JanitorSweepResult {
  /** Sandboxes removed because their TTL passed (or they were half-made). */
  expired: string[];
  /** Sandboxes removed because their episode workflow is no longer running. */
  closed: string[];
}

/**
 * Whether the workflow `episodeId` is still running. Any doubt (the server cannot be asked)
 * counts as open: the TTL removes the sandbox later anyway.
 */
export async function isEpisodeOpen(client: Client, episodeId: string): Promise<boolean> {
  try {
    const description = await client.workflow.getHandle(episodeId).describe();
    return description.status.name === 'RUNNING';
  } catch (error) {
    return !(error instanceof WorkflowNotFoundError);
  }
}

/** One sweep of one host's provider. */
export async function sweepSandboxes(
  provider: SandboxProvider,
  episodeOpen: (episodeId: string) => Promise<boolean>,
): Promise<JanitorSweepResult> {
  const expired = provider.sweepExpired ? await provider.sweepExpired() : [];
  const closed: string[] = [];
  for (const info of await provider.list()) {
    const episodeId = info.labels[EPISODE_LABEL];
    if (info.expiresAt <= Date.now()) {
      await provider.destroy(info.id);
      expired.push(info.id);
    } else if (episodeId !== undefined && !(await episodeOpen(episodeId))) {
      await provider.destroy(info.id);
      closed.push(info.id);
    }
  }
  return { expired, closed };
}

export function createJanitorActivities(deps: { sandbox: SandboxProvider }) {
  return {
    /** Sweeps this host's sandboxes; asks the worker's own Temporal client about episodes. */
    async sweepHostSandboxes(): Promise<JanitorSweepResult> {
      const client = Context.current().client;
      return sweepSandboxes(deps.sandbox, (episodeId) => isEpisodeOpen(client, episodeId));
    },
  };
}
