import { assembleEpisode } from './assemble.js';
import type { TrajectoryStore } from './store.js';
import type { TrajectoryRow } from './row.js';

/**
 * The trainer rows of a batch's successful episodes in `groupIds`. Only the episode's recorded
 * session counts, so chains of abandoned attempts never reach the trainer.
 */
export function batchRows(store: TrajectoryStore, batchId: string, groupIds: ReadonlySet<string>): TrajectoryRow[] {
  const rows: TrajectoryRow[] = [];
  for (const episode of store.listEpisodes(batchId)) {
    if (!groupIds.has(episode.groupId) || episode.outcome !== 'ok' || !episode.sessionId) continue;
    rows.push(...assembleEpisode(episode, store.loadTurns(episode.sessionId), store.loadChainReports(episode.sessionId)));
  }
  return rows;
}
