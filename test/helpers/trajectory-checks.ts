import { expect } from 'vitest';
import type { TrajectoryRow } from '../../trajectory/index.js';
import type { RecordedCompletion } from './recording-proxy.js';

/**
 * Checks a row's internal consistency and that every sampled run of tokens is exactly what the
 * engine returned for the prompt that precedes it.
 */
export function expectConsistentRow(row: TrajectoryRow, recorded: RecordedCompletion[]): void {
  const L = row.input_ids.length;
  for (const column of ['loss_mask', 'sampled_mask', 'logprobs', 'token_version'] as const) {
    expect(row[column], column).toHaveLength(L);
  }
  expect(row.turn_starts).toHaveLength(row.num_turns);
  expect(row.turn_finish_reason).toHaveLength(row.num_turns);
  expect(row.prompt_length).toBe(row.turn_starts[0]);
  row.loss_mask.forEach((m, i) => expect(m <= row.sampled_mask[i]!).toBe(true));
  expect(row.sampled_mask.slice(0, row.prompt_length).every((m) => m === 0)).toBe(true);

  // Samples of one task share their first prompt, so several answers may exist for one prompt.
  const byPrompt = new Map<string, RecordedCompletion[]>();
  for (const r of recorded) byPrompt.set(r.promptIds.join(','), [...(byPrompt.get(r.promptIds.join(',')) ?? []), r]);
  row.turn_starts.forEach((start, t) => {
    let end = start;
    while (end < L && row.sampled_mask[end] === 1) end++;
    expect(end, `turn ${t} has sampled tokens`).toBeGreaterThan(start);
    const answers = byPrompt.get(row.input_ids.slice(0, start).join(',')) ?? [];
    expect(answers.length, `the engine saw the prompt of turn ${t}`).toBeGreaterThan(0);
    const sampled = { ids: row.input_ids.slice(start, end), logprobs: row.logprobs.slice(start, end) };
    const returned = answers.map((a) => ({ ids: a.tokenIds, logprobs: a.logprobs.map((p) => Math.fround(p)) }));
    expect(returned).toContainEqual(sampled);
  });
}
