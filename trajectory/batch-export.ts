import { assembleEpisode } from './assemble.js';
import type { EpisodeRecord, TrajectoryStore } from './store.js';
import type { TrajectoryRow } from './row.js';

/**
 * The trainer rows of those of `episodes` that ended ok, in their order. Only each episode's
 * recorded session counts, so chains of abandoned attempts never reach the trainer.
 */
export function episodeRows(store: TrajectoryStore, episodes: readonly EpisodeRecord[]): TrajectoryRow[] {
  const rows: TrajectoryRow[] = [];
  for (const episode of episodes) {
    if (episode.outcome !== 'ok' || !episode.sessionId) continue;
    rows.push(...assembleEpisode(episode, store.loadTurns(episode.sessionId), store.loadChainReports(episode.sessionId)));
  }
  return rows;
}
