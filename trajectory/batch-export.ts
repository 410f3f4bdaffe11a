import { assembleEpisode } from './assemble.js';
import type { EpisodeRecord, Store } from './store/index.js';
import type { TrajectoryRow } from './row.js';

/**
 * The trainer rows of those of `episodes` that ended ok, in their order. Only each episode's
 * recorded session counts, so chains of abandoned attempts never reach the trainer.
 */
export async function episodeRows(store: Store, episodes: readonly EpisodeRecord[]): Promise<TrajectoryRow[]> {
  const rows: TrajectoryRow[] = [];
  for (const episode of episodes) {
    if (episode.outcome !== 'ok' || !episode.sessionId) continue;
    rows.push(...assembleEpisode(episode, await store.loadTurns(episode.sessionId), await store.loadChainReports(episode.sessionId)));
  }
  return rows;
}
