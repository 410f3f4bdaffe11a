import path from 'node:path';
import { assembleEpisode } from './assemble.js';
import { writeArrowStream, type ExportedFile } from './arrow-export.js';
import type { TrajectoryStore } from './store.js';
import type { TrajectoryRow } from './row.js';

export interface BatchExport {
  files: ExportedFile[];
  chains: number;
  tokens: number;
}

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

/**
 * Writes the trajectories of a batch's finished episodes (those of `groupIds`) to
 * `<dir>/part-00000.arrow`. Only the episode's recorded session counts, so chains of abandoned
 * attempts never reach the trainer and each episode appears exactly once.
 */
export async function exportBatch(
  store: TrajectoryStore,
  batchId: string,
  dir: string,
  groupIds: ReadonlySet<string>,
): Promise<BatchExport> {
  const rows = batchRows(store, batchId, groupIds);
  const file = await writeArrowStream(path.join(dir, 'part-00000.arrow'), rows);
  return {
    files: [file],
    chains: rows.length,
    tokens: rows.reduce((sum, r) => sum + r.input_ids.length, 0),
  };
}
