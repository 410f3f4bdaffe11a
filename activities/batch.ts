import path from 'node:path';
import { episodeRows, writeArrowStream, type Store } from '../trajectory/index.js';
import { GatewayAdminClient } from './gateway-admin.js';
import type { ManifestFile } from './types.js';

export interface BatchActivityDeps {
  store: Store;
  /** Where batch files go: `<exportDir>/<batchId>/groups/<groupId>.arrow`. */
  exportDir: string;
  gateway: { urls: readonly string[]; adminToken: string };
}

/** The Arrow file of one group of a batch. */
export function groupFilePath(exportDir: string, batchId: string, groupId: string): string {
  return path.join(exportDir, batchId, 'groups', `${groupId}.arrow`);
}

/** Activities of the batch workflow itself. */
export function createBatchActivities(deps: BatchActivityDeps) {
  const gateway = new GatewayAdminClient(deps.gateway);
  return {
    /** Writes a finished group's rows to its own Arrow IPC stream file; returns where, not the data. */
    async exportGroup(input: { batchId: string; groupId: string; episodeIds: string[] }): Promise<ManifestFile> {
      // Exactly the episodes the batch counts: a stale episode's re-run replaces it.
      const wanted = new Set(input.episodeIds);
      const episodes = await deps.store.listGroupEpisodes(input.batchId, input.groupId);
      const rows = await episodeRows(deps.store, episodes.filter((e) => wanted.has(e.episodeId)));
      return writeArrowStream(groupFilePath(deps.exportDir, input.batchId, input.groupId), rows);
    },

    /** The gateway's current policy version, for the staleness bound. */
    async policyVersion(): Promise<{ version: number }> {
      const { version } = await gateway.policy();
      return { version };
    },
  };
}
