/**
 * The janitor workflow, started by the janitor schedule (`workers/janitor.ts`): asks the store
 * which hosts are alive (forgetting those not seen within the host TTL), then every live host
 * queue's worker to sweep its sandboxes and agent state. A host that is down does not hold the
 * others up: its sweep times out waiting for a worker and is reported, and its successor sweeps
 * on start.
 */
import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { JanitorSweepResult } from '../activities/janitor.js';

export interface JanitorHostReport extends Partial<JanitorSweepResult> {
  hostQueue: string;
  /** Why this host's sweep did not happen (no worker, activity failure). */
  error?: string;
}

const registry = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 3 },
});

export async function janitorWorkflow(): Promise<JanitorHostReport[]> {
  const hostQueues = await registry.listJanitorHosts({ taskQueue: workflowInfo().taskQueue });
  return Promise.all(
    hostQueues.map(async (hostQueue): Promise<JanitorHostReport> => {
      const host = proxyActivities<Activities>({
        taskQueue: hostQueue,
        // A host with no worker polling must not stall the sweep of the others.
        scheduleToStartTimeout: '1 minute',
        startToCloseTimeout: '10 minutes',
        retry: { maximumAttempts: 2 },
      });
      try {
        return { hostQueue, ...(await host.sweepHost()) };
      } catch (error) {
        return { hostQueue, error: (error as Error).message };
      }
    }),
  );
}
