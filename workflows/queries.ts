import { defineQuery } from '@temporalio/workflow';
import type { BatchManifest, BatchProgress, EpisodeStatus } from '../activities/types.js';

/** Live progress of one episode. */
export const statusQuery = defineQuery<EpisodeStatus>('status');
/** Live progress of a batch. */
export const progressQuery = defineQuery<BatchProgress>('progress');
/**
 * The manifest of a batch that has ended, else null. For a cancelled batch (which ends cancelled
 * in Temporal, with no result) this is where its `cancelled` manifest is read.
 */
export const manifestQuery = defineQuery<BatchManifest | null>('manifest');
