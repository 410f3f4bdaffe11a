/**
 * The result stream (../../../shared/specs/sandbox.md, "Results leave the process under test as
 * they happen"): the reward's reporters (runners/) write one JSON line per test result to a
 * descriptor whose other end the host reads, `{"id": "<report id>", "status": "passed" |
 * "failed" | "skipped"}`, then `{"end": true}` once the run finished normally. A result cannot be
 * taken back once written, so a report rewritten at exit, or by a process left behind, disagrees
 * with it.
 *
 * The code under test shares the reporter's process for some runners and can write forged lines
 * too; a forged pass cannot hide the reporter's own failure of the same test (the worst status
 * is kept), and two lines giving one test different statuses, or a line that is not the
 * reporter's, are evidence of tampering in themselves.
 */
import { z } from 'zod';
import type { ReportedStatus } from './junit.js';
import { record, type TestStatuses } from './log-parsers/lines.js';

const StreamLineSchema = z.union([
  z.strictObject({ id: z.string(), status: z.enum(['passed', 'failed', 'skipped']) }),
  z.strictObject({ end: z.literal(true) }),
]);

export interface ResultStream {
  /** Each test's worst streamed status. */
  statuses: TestStatuses;
  /** Whether the end line came. */
  ended: boolean;
  /** What no honest reporter writes: lines that are not stream lines, conflicting statuses. */
  forged: string[];
}

/** How many pieces of evidence a detail names at most, each cut to `EVIDENCE_CHARS`. */
const EVIDENCE_SHOWN = 3;
const EVIDENCE_CHARS = 120;

export function parseStream(text: string): ResultStream {
  const statuses: TestStatuses = {};
  const forged: string[] = [];
  let ended = false;
  const lines = text.split('\n');
  // An honest stream ends with a newline; what follows the last one is an unfinished line.
  for (const [i, line] of lines.entries()) {
    if (line === '' && i === lines.length - 1) continue;
    let parsed: z.infer<typeof StreamLineSchema> | undefined;
    try {
      parsed = StreamLineSchema.parse(JSON.parse(line));
    } catch {
      forged.push(`not a stream line: ${JSON.stringify(line.slice(0, 200))}`);
      continue;
    }
    if ('end' in parsed) {
      if (ended) forged.push('a second end line');
      ended = true;
      continue;
    }
    if (ended) forged.push(`a result after the end line: ${parsed.id}`);
    const prev = statuses[parsed.id];
    if (prev !== undefined && prev !== parsed.status)
      forged.push(`stream said both ${prev} and ${parsed.status}: ${parsed.id}`);
    record(statuses, parsed.id, parsed.status);
  }
  return { statuses, ended, forged };
}

/**
 * Why the report cannot be the run's own, or undefined when it agrees with the stream: a test
 * whose status differs, a passed test the stream never saw, a streamed test the report lacks, a
 * stream that never ended, or forged stream lines. A test in the report alone with a status
 * other than passed is not evidence: it cannot raise the reward, and runners differ in whether
 * they announce a test they skip without running.
 */
export function tamperingEvidence(
  stream: ResultStream,
  reported: Record<string, ReportedStatus>,
): string | undefined {
  const evidence = [...stream.forged];
  if (!stream.ended) evidence.push('the stream has no end line: the run did not finish normally');
  for (const [id, status] of Object.entries(reported)) {
    const streamed = stream.statuses[id];
    if (streamed === undefined) {
      if (status === 'passed') evidence.push(`report says passed, stream never saw it: ${id}`);
    } else if (streamed !== status) {
      evidence.push(`report says ${status}, stream said ${streamed}: ${id}`);
    }
  }
  for (const [id, streamed] of Object.entries(stream.statuses)) {
    if (!(id in reported)) evidence.push(`stream said ${streamed}, report lacks it: ${id}`);
  }
  if (evidence.length === 0) return undefined;
  // One line: the reward's detail keeps its first line whole (result.ts `tail`).
  const more = evidence.length - EVIDENCE_SHOWN;
  const shown = evidence.slice(0, EVIDENCE_SHOWN).map((e) => e.slice(0, EVIDENCE_CHARS));
  return `the report disagrees with the result stream: ${shown.join('; ')}${more > 0 ? `; and ${more} more` : ''}`;
}
