/**
 * What every log parser shares: the log as a terminal would show it (colour codes dropped, a line
 * overwritten with `\r` kept as its last state) and the rule that a test reported twice keeps its
 * worst status, so a line the code under test prints cannot hide a real failure.
 */
import type { ReportedStatus } from '../junit.js';

export type TestStatuses = Record<string, ReportedStatus>;

/**
 * CSI sequences (colours, cursor moves), OSC sequences (titles, links) and two-byte escapes.
 * The classes of each part are disjoint, so matching is linear in the log's length.
 */
const ANSI = /\x1b\[[0-9;:?<=>]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]/g;

export function stripAnsi(text: string): string {
  return text.includes('\x1b') ? text.replace(ANSI, '') : text;
}

/** The log's lines, colourless, each as it was last drawn, without trailing whitespace. */
export function logLines(log: string): string[] {
  return stripAnsi(log)
    .split('\n')
    .map((line) => {
      const cr = line.lastIndexOf('\r', line.length - 2);
      return (cr >= 0 ? line.slice(cr + 1) : line).trimEnd();
    });
}

const RANK: Record<ReportedStatus, number> = { passed: 0, skipped: 1, failed: 2 };

/** Records `status` under `id` unless a worse one is there already. */
export function record(results: TestStatuses, id: string, status: ReportedStatus): void {
  const prev = results[id];
  if (prev === undefined || RANK[status] > RANK[prev]) results[id] = status;
}

/** The number of leading spaces. */
export function indentOf(line: string): number {
  let i = 0;
  while (line.charCodeAt(i) === 32) i++;
  return i;
}

/** `name (12 ms)` or `name (12ms)` → `name`: the duration jest and mocha print after a test. */
export function dropParenDuration(name: string): string {
  if (!name.endsWith('ms)')) return name;
  const open = name.lastIndexOf(' (');
  if (open < 0) return name;
  return /^\d+(?:\.\d+)? ?ms$/.test(name.slice(open + 2, -1)) ? name.slice(0, open) : name;
}
