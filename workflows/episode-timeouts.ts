import type { EpisodeTimeouts } from '../activities/types.js';

/**
 * Defaults of `EpisodeTimeouts` (and of `worker.scheduleToStartMs` / `worker.cleanupWindowMs`),
 * also taken by episode inputs recorded before the field existed, so their histories replay.
 */
export const EPISODE_TIMEOUT_DEFAULTS: EpisodeTimeouts = { scheduleToStartMs: 5 * 60 * 1000, cleanupWindowMs: 2 * 60 * 1000 };
