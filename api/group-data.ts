import { RecordBatchReader, RecordBatchStreamWriter, Table, type RecordBatch } from 'apache-arrow';
import { createHash } from 'node:crypto';
import type { FinishedGroup } from '../activities/types.js';
import { rowsToTable, type ArtifactStore } from '../trajectory/index.js';

/** A group's file does not match what the manifest recorded for it. */
export class GroupFileMismatchError extends Error {
  override name = 'GroupFileMismatchError';
}

/** Groups whose rows could not be exported; their data is not whole. */
export class IncompleteGroupsError extends Error {
  override name = 'IncompleteGroupsError';
  constructor(readonly groups: FinishedGroup[]) {
    super(
      `rows are missing from ${groups.length} group(s) reported export_failed: ` +
        groups.map((g) => `${g.group_id} (episodes ${(g.missing_episode_ids ?? []).join(', ') || 'unknown'})`).join('; '),
    );
  }
}

/**
 * The record batches of the groups' files, read from the artifact store (any host's writes), each
 * checked against the sha256 and row count the batch recorded. Groups reported `export_failed`
 * make it throw: data with rows missing is never handed out as if whole.
 */
export async function readGroupBatches(artifacts: ArtifactStore, groups: FinishedGroup[]): Promise<RecordBatch[]> {
  const incomplete = groups.filter((g) => g.status === 'export_failed');
  if (incomplete.length > 0) throw new IncompleteGroupsError(incomplete);
  const batches: RecordBatch[] = [];
  for (const group of groups) {
    if (!group.file) continue;
    const bytes = await artifacts.get(group.file.uri);
    if (createHash('sha256').update(bytes).digest('hex') !== group.file.sha256) {
      throw new GroupFileMismatchError(`${group.file.uri} does not match its recorded sha256`);
    }
    const read = RecordBatchReader.from(bytes).readAll();
    const rows = read.reduce((sum, b) => sum + b.numRows, 0);
    if (rows !== group.file.rows) throw new GroupFileMismatchError(`${group.file.uri} has ${rows} rows, the manifest says ${group.file.rows}`);
    batches.push(...read);
  }
  return batches;
}

/** One Arrow IPC stream of the groups' rows (an empty stream with the schema when there are none). */
export async function groupsStream(artifacts: ArtifactStore, groups: FinishedGroup[]): Promise<Uint8Array> {
  const batches = await readGroupBatches(artifacts, groups);
  const table = batches.length > 0 ? new Table(batches) : rowsToTable([]);
  return RecordBatchStreamWriter.writeAll(table).toUint8Array(true);
}
