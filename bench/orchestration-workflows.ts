/**
 * Workflows of the orchestration benchmark: the production episode and batch workflows, and a
 * bare baseline that runs the same number of no-op activities in sequence.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { NoopActivities } from './noop-activities.js';

export { episodeWorkflow, batchWorkflow } from '../workflows/index.js';

const { noop } = proxyActivities<NoopActivities>({ startToCloseTimeout: '1 minute' });

export async function baselineWorkflow(activities: number): Promise<number> {
  for (let i = 0; i < activities; i++) await noop();
  return activities;
}
