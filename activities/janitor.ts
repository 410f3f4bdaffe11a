/**
 * The janitor's activities. On each host's queue: remove the host's sandboxes (with their mounts
 * and cgroups) whose TTL has passed, half-made ones, and those whose episode is closed, i.e. whose
 * episode workflow is no longer running; and the built-in agent's state files of closed episodes.
 * On the shared queue: the host queues to sweep, from the store's host registry.
 */
import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { episodeOfStateFile } from '../agents/builtin/index.js';
import type { SandboxProvider } from '../sandbox/provider.js';
import type { RegistryStore } from '../trajectory/index.js';
import { hostQueueOf } from '../workers/host-queue.js';

/** The label that ties a sandbox to its episode: the episode workflow's id. */
export const EPISODE_LABEL = 'episode';

export interface JanitorSweepResult {
  /** Sandboxes removed because their TTL passed (or they were half-made). */
  expired: string[];
  /** Sandboxes removed because their episode workflow is no longer running. */
  closed: string[];
  /** Agent state files (names in the state directory) removed because their episode is closed. */
  agentState: string[];
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
): Promise<Omit<JanitorSweepResult, 'agentState'>> {
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

/**
 * Removes the state files in `stateDir` of closed episodes: an attempt whose cleanup never ran
 * (its host was down past the cleanup window, or its batch was terminated) leaves one behind.
 */
export async function sweepAgentState(stateDir: string, episodeOpen: (episodeId: string) => Promise<boolean>): Promise<string[]> {
  let files: string[];
  try {
    files = await readdir(stateDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const open = new Map<string, Promise<boolean>>();
  const removed: string[] = [];
  for (const file of files.sort()) {
    const episodeId = episodeOfStateFile(file);
    if (episodeId === undefined) continue;
    if (!open.has(episodeId)) open.set(episodeId, episodeOpen(episodeId));
    if (await open.get(episodeId)!) continue;
    await rm(path.join(stateDir, file), { force: true });
    removed.push(file);
  }
  return removed;
}

/** Everything a host sweep removes: sandboxes, then agent state. */
export async function sweepThisHost(
  deps: { sandbox: SandboxProvider; agentStateDir: string },
  episodeOpen: (episodeId: string) => Promise<boolean>,
): Promise<JanitorSweepResult> {
  const sandboxes = await sweepSandboxes(deps.sandbox, episodeOpen);
  return { ...sandboxes, agentState: await sweepAgentState(deps.agentStateDir, episodeOpen) };
}

export interface JanitorActivityDeps {
  /** This host's sandboxes. */
  sandbox: SandboxProvider;
  /** This host's built-in agent state directory. */
  agentStateDir: string;
  /** Where hosts register (`workers/janitor.ts`). */
  store: Pick<RegistryStore, 'listRegistrations' | 'forgetRegistrations'>;
  /** A host not seen for this long is forgotten, ms. */
  hostTtlMs: number;
}

export function createJanitorActivities(deps: JanitorActivityDeps) {
  return {
    /** Sweeps this host; asks the worker's own Temporal client about episodes. */
    async sweepHost(): Promise<JanitorSweepResult> {
      const client = Context.current().client;
      return sweepThisHost(deps, (episodeId) => isEpisodeOpen(client, episodeId));
    },

    /**
     * Forgets hosts not seen within the TTL and answers the host queues of the others that serve
     * `taskQueue` (one store may serve several deployments).
     */
    async listJanitorHosts(input: { taskQueue: string }): Promise<string[]> {
      await deps.store.forgetRegistrations('host', deps.hostTtlMs);
      const live = await deps.store.listRegistrations('host', deps.hostTtlMs);
      return live.filter((r) => r.id === hostQueueOf(input.taskQueue, r.address)).map((r) => r.id);
    },
  };
}
