import type { RecordBatch, Vector } from 'apache-arrow';
import type { RecordedTrajectory } from './logprob-report.js';

/** The recorded log-prob columns of the rows whose trajectory id is wanted, read from Arrow batches. */
export function recordedTrajectories(batches: readonly RecordBatch[], wanted: ReadonlySet<string>): Map<string, RecordedTrajectory> {
  const found = new Map<string, RecordedTrajectory>();
  for (const batch of batches) {
    const ids = batch.getChild('trajectory_id')!;
    const promptLengths = batch.getChild('prompt_length')!;
    const masks = batch.getChild('sampled_mask')!;
    const logprobs = batch.getChild('logprobs')!;
    const turnStarts = batch.getChild('turn_starts')!;
    // Absent from files exported before turns recorded them: every turn then reads as unrecorded.
    const temperatures = batch.getChild('turn_temperature');
    const modes = batch.getChild('turn_logprobs_mode');
    for (let i = 0; i < batch.numRows; i++) {
      const id = ids.get(i) as string;
      if (!wanted.has(id)) continue;
      found.set(id, {
        trajectoryId: id,
        promptLength: promptLengths.get(i) as number,
        sampledMask: (masks.get(i) as Vector).toArray() as Uint8Array,
        logprobs: (logprobs.get(i) as Vector).toArray() as Float32Array,
        turnStarts: (turnStarts.get(i) as Vector).toArray() as Int32Array,
        turnTemperature: temperatures ? ((temperatures.get(i) as Vector).toJSON() as (number | null)[]) : [],
        turnLogprobsMode: modes ? ((modes.get(i) as Vector).toJSON() as (string | null)[]) : [],
      });
    }
  }
  return found;
}
