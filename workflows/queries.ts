import { defineQuery } from '@temporalio/workflow';
import type { BatchProgress, EpisodeStatus } from '../activities/types.js';

/** Live progress of one episode. */
export const statusQuery = defineQuery<EpisodeStatus>('status');
/** Live progress of a batch. */
export const progressQuery = defineQuery<BatchProgress>('progress');
