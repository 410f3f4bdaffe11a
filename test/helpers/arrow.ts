import { tableFromIPC } from 'apache-arrow';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { TrajectoryRow } from '../../trajectory/index.js';

/** Rows of an Arrow IPC stream, as plain objects with plain arrays. */
export function streamRows(bytes: Uint8Array): TrajectoryRow[] {
  return tableFromIPC(bytes)
    .toArray()
    .map((row) => {
      const plain = row.toJSON() as Record<string, unknown>;
      for (const [key, value] of Object.entries(plain)) {
        if (value && typeof value === 'object' && 'toArray' in value) plain[key] = Array.from((value as { toArray(): ArrayLike<unknown> }).toArray());
      }
      return plain as unknown as TrajectoryRow;
    });
}

/** Reads an exported Arrow stream file back into plain rows. */
export function readTrajectories(uri: string): TrajectoryRow[] {
  return streamRows(readFileSync(fileURLToPath(uri)));
}
