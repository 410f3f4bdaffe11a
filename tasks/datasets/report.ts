/**
 * What a load says besides its tasks: the format it read, and the published fields it did not
 * know. An unknown field of a published dataset is not an error (datasets grow columns), but it
 * is never dropped in silence: each one is reported once per file with the rows it was in.
 */
import { where, type RowLocation } from '../load-error.js';

/** The task formats `loadTasks` reads. */
export const TASK_FORMATS = [
  'agent-rollout',
  'swe-bench',
  'swe-rebench',
  'swe-gym',
  'r2e-gym',
  'harbor',
] as const;
export type TaskFormat = (typeof TASK_FORMATS)[number];

/** Called once per (file, unknown field) with a readable line. */
export type Warn = (message: string) => void;

/** Collects unknown fields per file and field, so thousands of rows give one line each. */
export class UnknownFields {
  private readonly seen = new Map<string, { at: RowLocation; field: string; dataset: string; rows: number }>();

  add(dataset: string, field: string, at: RowLocation): void {
    const key = `${at.file}\0${field}`;
    const known = this.seen.get(key);
    if (known) known.rows += 1;
    else this.seen.set(key, { at, field, dataset, rows: 1 });
  }

  /** One line per unknown field, e.g. `data.jsonl:3: unknown SWE-bench field "foo" ignored (in 12 rows)`. */
  messages(): string[] {
    return [...this.seen.values()].map(
      ({ at, field, dataset, rows }) =>
        `${where(at)}: unknown ${dataset} field "${field}" ignored (in ${rows} row${rows === 1 ? '' : 's'})`,
    );
  }
}

/** Writes a warning to stderr: the default `warn` of `loadTasks`. */
export const warnToStderr: Warn = (message) => {
  process.stderr.write(`warning: ${message}\n`);
};
