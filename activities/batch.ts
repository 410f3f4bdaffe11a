import { ApplicationFailure } from '@temporalio/activity';
import { exportGroup, GroupExportError, type ArtifactStore, type Store } from '../trajectory/index.js';
import { GROUP_EXPORT_INCOMPLETE, type GroupExportIncompleteDetails } from '../workflows/export-failures.js';
import { createBatchResultActivities } from './batch-results.js';
import { GatewayAdminClient } from './gateway-admin.js';
import type { ManifestFile } from './types.js';

export interface BatchActivityDeps {
  store: Store;
  /** Where group files go: `<batchId>/groups/<groupId>.arrow` under its root. */
  artifacts: ArtifactStore;
  gateway: { urls: readonly string[]; adminToken: string };
}

/** Activities of the batch workflow itself. */
export function createBatchActivities(deps: BatchActivityDeps) {
  const gateway = new GatewayAdminClient(deps.gateway);
  return {
    ...createBatchResultActivities(deps),

    /**
     * Writes a finished group's rows to its own Arrow IPC stream file and checks the file read
     * back against the store; returns where, not the data. Missing rows fail it (retryably: a
     * flaky artifact store may do better next time) with the episodes named in the details.
     * Without `episodeIds`, the group's ok episodes are those its batch recorded in the store.
     */
    async exportGroup(input: { batchId: string; groupId: string; episodeIds?: string[] }): Promise<ManifestFile> {
      const episodeIds = input.episodeIds ?? (await deps.store.listBatchResults(input.batchId, [input.groupId])).flatMap((r) => (r.reward === null ? [] : [r.episodeId]));
      try {
        return await exportGroup(deps, { batchId: input.batchId, groupId: input.groupId, episodeIds });
      } catch (error) {
        if (!(error instanceof GroupExportError)) throw error;
        throw ApplicationFailure.create({
          type: GROUP_EXPORT_INCOMPLETE,
          message: error.message.slice(0, 2000),
          details: [{ missingEpisodeIds: error.missingEpisodeIds } satisfies GroupExportIncompleteDetails],
        });
      }
    },

    /** The gateway's current policy version, for the staleness bound. */
    async policyVersion(): Promise<{ version: number }> {
      const { version } = await gateway.policy();
      return { version };
    },
  };
}
