import type { ArtifactStore, Store } from '../trajectory/index.js';
import type { BatchResult, BatchGroupRecord } from '../trajectory/store/types.js';
import type { BatchManifest, FinishedGroup, GroupFailure, GroupStatus, ManifestFile } from './types.js';

/**
 * Largest manifest (JSON bytes) a batch workflow returns whole. Temporal refuses results over
 * 2 MB; a larger manifest is written to the artifact store and the result points at it.
 */
export const MANIFEST_INLINE_MAX_BYTES = 512 * 1024;
/** JSON bytes of the groups of one `batchGroups` answer at most (one group is always there), far below the payload limit. */
export const MAX_ANSWER_BYTES = 512 * 1024;
/** Groups read from the store in one query while a manifest is assembled. */
const PAGE = 256;

/** The reason of a sample that has no recorded ending in a finished group: only a cancelled batch finishes a group so. */
const NEVER_STARTED = 'cancelled';

/** A finished group as manifests and the `finishedGroups` cursor list it, from its stored rows. */
export function finishedGroupOf(group: BatchGroupRecord, results: BatchResult[]): FinishedGroup {
  const bySample = new Map(results.map((r) => [r.sample, r]));
  const rewards: (number | null)[] = [];
  const failures: GroupFailure[] = [];
  for (let sample = 0; sample < group.nRequested; sample++) {
    const result = bySample.get(sample);
    rewards.push(result?.reward ?? null);
    if (!result) failures.push({ episode_index: sample, reason: NEVER_STARTED });
    else if (result.failure !== null) failures.push({ episode_index: sample, reason: result.failure });
  }
  const status = group.status as GroupStatus;
  return {
    group_id: group.groupId,
    task_id: group.taskId,
    n_requested: group.nRequested,
    n_ok: rewards.filter((r) => r !== null).length,
    status,
    rewards,
    failures,
    ...(status === 'export_failed' ? { missing_episode_ids: group.missingEpisodeIds } : {}),
    file: group.fileJson === null ? null : (JSON.parse(group.fileJson) as ManifestFile),
  };
}

/** What the batch workflow tells the store when a group has finished. */
export interface FinishGroupInput {
  batchId: string;
  groupId: string;
  taskId: string;
  seq: number;
  nRequested: number;
  status: GroupStatus;
  file: ManifestFile | null;
  /** For `export_failed`: the episodes the export named, or null for every ok episode of the group. */
  missingEpisodeIds: string[] | null;
}

/** Activities that keep a batch's per-episode state in the store instead of in the workflow. */
export function createBatchResultActivities(deps: { store: Store; artifacts: ArtifactStore }) {
  const { store } = deps;
  /** Finished groups from finish position `from` on: at most `maxGroups`, about `MAX_ANSWER_BYTES` of them (always one). */
  const groupsFrom = async (batchId: string, from: number, maxGroups: number): Promise<FinishedGroup[]> => {
    const records = await store.listBatchGroups(batchId, from, maxGroups);
    const results = new Map<string, BatchResult[]>(records.map((g) => [g.groupId, []]));
    for (const r of await store.listBatchResults(batchId, records.map((g) => g.groupId))) results.get(r.groupId)!.push(r);
    const groups: FinishedGroup[] = [];
    let bytes = 0;
    for (const record of records) {
      const group = finishedGroupOf(record, results.get(record.groupId)!);
      bytes += JSON.stringify(group).length;
      if (groups.length > 0 && bytes > MAX_ANSWER_BYTES) break;
      groups.push(group);
    }
    return groups;
  };

  return {
    /** Records how one sample ended (idempotent: the sample's row is rewritten). */
    async recordBatchResult(result: BatchResult): Promise<void> {
      await store.recordBatchResult(result);
    },

    /** Records a finished group at its finish position (idempotent). */
    async finishBatchGroup(input: FinishGroupInput): Promise<void> {
      const missing = input.missingEpisodeIds ?? (await store.listBatchResults(input.batchId, [input.groupId])).flatMap((r) => (r.reward === null ? [] : [r.episodeId]));
      await store.finishBatchGroup({
        batchId: input.batchId,
        groupId: input.groupId,
        taskId: input.taskId,
        seq: input.seq,
        nRequested: input.nRequested,
        status: input.status,
        fileJson: input.file && JSON.stringify(input.file),
        missingEpisodeIds: input.status === 'export_failed' ? missing : [],
      });
    },

    /** Records groups no sample of which ever started (a cancelled batch), at positions from `firstSeq` on. */
    async finishUnstartedGroups(input: { batchId: string; groups: { groupId: string; taskId: string }[]; firstSeq: number; nRequested: number }): Promise<void> {
      for (const [i, g] of input.groups.entries()) {
        await store.finishBatchGroup({ batchId: input.batchId, groupId: g.groupId, taskId: g.taskId, seq: input.firstSeq + i, nRequested: input.nRequested, status: 'failure', fileJson: null, missingEpisodeIds: [] });
      }
    },

    /** Finished groups past the cursor, for the `finishedGroups` update. */
    async batchGroups(input: { batchId: string; after: number; maxGroups: number }): Promise<FinishedGroup[]> {
      return groupsFrom(input.batchId, input.after, input.maxGroups);
    },

    /**
     * The manifest with every finished group, in finish order. Small enough, it is the answer;
     * else it is written whole to `<batchId>/manifest.json` in the artifact store and the answer
     * has no groups and files, only `manifest_uri` pointing there.
     */
    async batchManifest(input: { summary: Omit<BatchManifest, 'groups' | 'files'> }): Promise<BatchManifest> {
      const { summary } = input;
      const groups: FinishedGroup[] = [];
      for (;;) {
        const page = await groupsFrom(summary.batch_id, groups.length, PAGE);
        if (page.length === 0) break;
        groups.push(...page);
      }
      const files = groups.flatMap((g) => (g.file ? [g.file] : []));
      const manifest: BatchManifest = { ...summary, groups, files, stats: { ...summary.stats, chains: files.reduce((sum, f) => sum + f.rows, 0) } };
      const bytes = Buffer.from(JSON.stringify(manifest));
      if (bytes.length <= MANIFEST_INLINE_MAX_BYTES) return manifest;
      const stored = await deps.artifacts.put(`${summary.batch_id}/manifest.json`, bytes);
      return { ...manifest, groups: [], files: [], manifest_uri: stored.uri };
    },
  };
}
