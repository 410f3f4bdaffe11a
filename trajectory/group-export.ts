import { RecordBatchReader } from 'apache-arrow';
import { createHash } from 'node:crypto';
import type { ArtifactStore } from './artifacts/index.js';
import { arrowStreamBytes } from './arrow-export.js';
import { episodeRows } from './batch-export.js';
import type { Store } from './store/index.js';

/** One group's file, as the batch manifest lists it. */
export interface GroupFile {
  uri: string;
  format: 'arrow-stream';
  rows: number;
  sha256: string;
}

/**
 * A group's file would not hold every row it should: an ok episode has no record or no rows in
 * the store, or the file read back from the artifact store lacks or garbles rows.
 */
export class GroupExportError extends Error {
  override name = 'GroupExportError';
  constructor(
    message: string,
    /** The ok episodes whose rows are not (all) in the file. */
    readonly missingEpisodeIds: string[],
  ) {
    super(message);
  }
}

/** Where a group's file lives under the artifact store's root. */
export function groupKey(batchId: string, groupId: string): string {
  return `${batchId}/groups/${groupId}.arrow`;
}

/** Rows per episode id in an Arrow IPC stream. */
function rowsPerEpisode(bytes: Uint8Array): Map<string, number> {
  const counts = new Map<string, number>();
  for (const batch of RecordBatchReader.from(bytes).readAll()) {
    const ids = batch.getChild('episode_id');
    if (!ids) throw new Error('the file has no episode_id column');
    for (let i = 0; i < batch.numRows; i++) {
      const id = ids.get(i) as string;
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
  }
  return counts;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/**
 * Writes the rows of a finished group's ok episodes (`episodeIds`, exactly the ones the batch
 * counts) to the artifact store, then reads the file back and checks it row by row against the
 * store: every ok episode must be there with all its chains. Anything short of that throws
 * `GroupExportError` naming the episodes, so a group is never handed over with rows missing.
 */
export async function exportGroup(
  deps: { store: Store; artifacts: ArtifactStore },
  input: { batchId: string; groupId: string; episodeIds: readonly string[] },
): Promise<GroupFile> {
  const wanted = new Set(input.episodeIds);
  const episodes = (await deps.store.listGroupEpisodes(input.batchId, input.groupId)).filter((e) => wanted.has(e.episodeId));
  const rows = await episodeRows(deps.store, episodes);
  const expected = new Map<string, number>();
  for (const row of rows) expected.set(row.episode_id, (expected.get(row.episode_id) ?? 0) + 1);
  const unrecorded = input.episodeIds.filter((id) => !expected.has(id));
  if (unrecorded.length > 0) {
    throw new GroupExportError(`group ${input.groupId}: ${unrecorded.length} ok episode(s) have no rows in the store: ${unrecorded.join(', ')}`, unrecorded);
  }
  const bytes = arrowStreamBytes(rows);
  const stored = await deps.artifacts.put(groupKey(input.batchId, input.groupId), bytes);
  const digest = sha256(bytes);
  const back = await deps.artifacts.get(stored.uri).catch((error: unknown) => {
    throw new GroupExportError(`group ${input.groupId}: ${stored.uri} cannot be read back: ${(error as Error).message}`, [...input.episodeIds]);
  });
  let found: Map<string, number>;
  try {
    if (sha256(back) !== digest) throw new Error(`its sha256 differs from what was written`);
    found = rowsPerEpisode(back);
  } catch (error) {
    throw new GroupExportError(`group ${input.groupId}: ${stored.uri} read back is not the file written: ${(error as Error).message}`, [...input.episodeIds]);
  }
  const short = input.episodeIds.filter((id) => found.get(id) !== expected.get(id));
  if (short.length > 0) throw new GroupExportError(`group ${input.groupId}: ${stored.uri} lacks rows of ${short.join(', ')}`, short);
  const foreign = [...found.keys()].filter((id) => !wanted.has(id));
  if (foreign.length > 0) throw new GroupExportError(`group ${input.groupId}: ${stored.uri} holds rows of episodes it should not: ${foreign.join(', ')}`, [...input.episodeIds]);
  return { uri: stored.uri, format: 'arrow-stream', rows: rows.length, sha256: digest };
}
