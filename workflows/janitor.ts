/**
 * The janitor workflow, started by the janitor schedule (`workers/janitor.ts`): asks every host
 * queue's worker to sweep its sandboxes. A host that is down does not hold the others up: its
 * sweep times out waiting for a worker and is reported, and its successor sweeps on start.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { JanitorSweepResult } from '../activities/janitor.js';

export interface JanitorInput {
  /** The host queues (`<taskQueue>-host-<hostId>`) whose sandboxes to sweep. */
  hostQueues: string[];
}

export interface JanitorHostReport extends Partial<JanitorSweepResult> {
  hostQueue: string;
  /** Why this host's sweep did not happen (no worker, activity failure). */
  error?: string;
}

export async function janitorWorkflow(input: JanitorInput): Promise<JanitorHostReport[]> {
  return Promise.all(
    input.hostQueues.map(async (hostQueue): Promise<JanitorHostReport> => {
      const host = proxyActivities<Activities>({
        taskQueue: hostQueue,
        // A host with no worker polling must not stall the sweep of the others.
        scheduleToStartTimeout: '1 minute',
        startToCloseTimeout: '10 minutes',
        retry: { maximumAttempts: 2 },
      });
      try {
        return { hostQueue, ...(await host.sweepHostSandboxes()) };
      } catch (error) {
        return { hostQueue, error: (error as Error).message };
      }
    }),
  );
}
