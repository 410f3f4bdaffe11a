import { RecordBatchReader, RecordBatchStreamWriter, Table, type RecordBatch } from 'apache-arrow';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { FinishedGroup } from '../activities/types.js';
import { rowsToTable } from '../trajectory/index.js';
import { CorruptFileError } from './errors.js';

const ACKS_FILE = 'acks.json';
const REPORT_PREFIX = 'logprobs-';

function writeJsonAtomically(file: string, value: unknown): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`);
  renameSync(tmp, file);
}

/**
 * What the API keeps beside a batch's files (`<exportDir>/<batchId>/`): the acknowledged groups
 * and the log-prob consistency reports. Synchronous file access keeps each read-modify-write whole
 * within this process.
 */
export class BatchFiles {
  constructor(private readonly exportDir: string) {}

  private dir(batchId: string): string {
    return path.join(this.exportDir, batchId);
  }

  ackedGroups(batchId: string): string[] {
    try {
      return (JSON.parse(readFileSync(path.join(this.dir(batchId), ACKS_FILE), 'utf8')) as { group_ids: string[] }).group_ids;
    } catch {
      return [];
    }
  }

  /** Adds groups to the acknowledged set; returns the whole set, in acknowledgement order. */
  ack(batchId: string, groupIds: string[]): string[] {
    const acked = this.ackedGroups(batchId);
    for (const id of groupIds) if (!acked.includes(id)) acked.push(id);
    writeJsonAtomically(path.join(this.dir(batchId), ACKS_FILE), { group_ids: acked });
    return acked;
  }

  /** Stores a report as `logprobs-<time>.json` and returns its URI. */
  saveReport(batchId: string, createdAt: Date, report: (uri: string) => unknown): string {
    const file = path.join(this.dir(batchId), `${REPORT_PREFIX}${createdAt.toISOString().replace(/[:.]/g, '-')}.json`);
    const uri = pathToFileURL(file).href;
    writeJsonAtomically(file, report(uri));
    return uri;
  }

  /** URIs of the stored reports, oldest first. */
  reports(batchId: string): string[] {
    try {
      return readdirSync(this.dir(batchId))
        .filter((f) => f.startsWith(REPORT_PREFIX) && f.endsWith('.json'))
        .sort()
        .map((f) => pathToFileURL(path.join(this.dir(batchId), f)).href);
    } catch {
      return [];
    }
  }
}

/** The record batches of the groups' files, each checked against the sha256 the batch recorded. */
export function readGroupBatches(groups: FinishedGroup[]): RecordBatch[] {
  const batches: RecordBatch[] = [];
  for (const group of groups) {
    if (!group.file) continue;
    const bytes = readFileSync(fileURLToPath(group.file.uri));
    if (createHash('sha256').update(bytes).digest('hex') !== group.file.sha256) throw new CorruptFileError(group.file.uri);
    batches.push(...RecordBatchReader.from(bytes).readAll());
  }
  return batches;
}

/** One Arrow IPC stream of the groups' rows (an empty stream with the schema when there are none). */
export function groupsStream(groups: FinishedGroup[]): Uint8Array {
  const batches = readGroupBatches(groups);
  const table = batches.length > 0 ? new Table(batches) : rowsToTable([]);
  return RecordBatchStreamWriter.writeAll(table).toUint8Array(true);
}
