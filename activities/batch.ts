import path from 'node:path';
import { assembleEpisode, writeArrowStream, type TrajectoryRow, type TrajectoryStore } from '../trajectory/index.js';
import { GatewayAdminClient } from './gateway-admin.js';
import type { ManifestFile } from './types.js';

export interface BatchActivityDeps {
  store: TrajectoryStore;
  /** Where batch files go: `<exportDir>/<batchId>/groups/<groupId>.arrow`. */
  exportDir: string;
  gateway: { url: string; adminToken: string };
}

/** The Arrow file of one group of a batch. */
export function groupFilePath(exportDir: string, batchId: string, groupId: string): string {
  return path.join(exportDir, batchId, 'groups', `${groupId}.arrow`);
}

/**
 * Rows of exactly these episodes (the ones whose result the batch counts: a stale episode's
 * re-run replaces it), in sample order. Only each episode's recorded session counts, so chains of
 * abandoned attempts never reach the trainer.
 */
export function episodeRows(store: TrajectoryStore, batchId: string, groupId: string, episodeIds: readonly string[]): TrajectoryRow[] {
  const wanted = new Set(episodeIds);
  const rows: TrajectoryRow[] = [];
  for (const episode of store.listGroupEpisodes(batchId, groupId)) {
    if (!wanted.has(episode.episodeId) || episode.outcome !== 'ok' || !episode.sessionId) continue;
    rows.push(...assembleEpisode(episode, store.loadTurns(episode.sessionId), store.loadChainReports(episode.sessionId)));
  }
  return rows;
}

/** Activities of the batch workflow itself. */
export function createBatchActivities(deps: BatchActivityDeps) {
  const gateway = new GatewayAdminClient(deps.gateway);
  return {
    /** Writes a finished group's rows to its own Arrow IPC stream file; returns where, not the data. */
    async exportGroup(input: { batchId: string; groupId: string; episodeIds: string[] }): Promise<ManifestFile> {
      const rows = episodeRows(deps.store, input.batchId, input.groupId, input.episodeIds);
      return writeArrowStream(groupFilePath(deps.exportDir, input.batchId, input.groupId), rows);
    },

    /** The gateway's current policy version, for the staleness bound. */
    async policyVersion(): Promise<{ version: number }> {
      const { version } = await gateway.policy();
      return { version };
    },
  };
}
