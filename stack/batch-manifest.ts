import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import type { BatchManifest } from '../activities/types.js';
import type { ArtifactStore } from '../trajectory/index.js';
import { manifestQuery } from '../workflows/queries.js';

/**
 * Waits for a batch to end and returns its manifest: a completed batch's result, a cancelled
 * batch's `manifest` query answer (it ends cancelled in Temporal, without a result). A manifest
 * too large for a workflow result points at the whole one (`manifest_uri`): given `artifacts`, it
 * is read from there, else returned as it is.
 */
export async function endedBatchManifest(handle: WorkflowHandle, artifacts?: ArtifactStore): Promise<BatchManifest> {
  let manifest: BatchManifest | null;
  try {
    manifest = (await handle.result()) as BatchManifest;
  } catch (error) {
    if (!(error instanceof WorkflowFailedError && error.cause instanceof CancelledFailure)) throw error;
    manifest = await handle.query(manifestQuery);
    if (!manifest) throw error;
  }
  if (!manifest.manifest_uri || !artifacts) return manifest;
  return JSON.parse(Buffer.from(await artifacts.get(manifest.manifest_uri)).toString('utf8')) as BatchManifest;
}
