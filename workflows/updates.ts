import { defineUpdate } from '@temporalio/workflow';
import type { FinishedGroupsAnswer, FinishedGroupsRequest } from '../activities/types.js';

/**
 * Finished groups of a batch past a cursor: waits until at least one group past `after` has
 * finished or the batch has ended. A trainer takes groups as they finish and trains on them early.
 */
export const finishedGroupsUpdate = defineUpdate<FinishedGroupsAnswer, [FinishedGroupsRequest]>('finishedGroups');
