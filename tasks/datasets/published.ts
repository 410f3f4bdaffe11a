/**
 * Reading one row of a published dataset: its fields are validated with the dataset's own zod
 * schema (loose, so columns we do not read may be there), and every field that is neither read
 * nor listed as knowingly unused is reported as unknown.
 */
import { z } from 'zod';
import { loadError, type RowLocation } from '../load-error.js';
import { isRecord } from './rows.js';
import type { UnknownFields } from './report.js';

/** What a dataset module needs to read its rows. */
export interface PublishedShape<S extends z.ZodObject> {
  /** Name used in messages, e.g. `SWE-bench`. */
  dataset: string;
  /** The fields read (a loose object: other columns reach the unknown-field check). */
  schema: S;
  /** Fields of the published format that map onto nothing of ours, on purpose. */
  unused: readonly string[];
}

export function parsePublishedRow<S extends z.ZodObject>(
  shape: PublishedShape<S>,
  value: unknown,
  at: RowLocation,
  unknown: UnknownFields,
): z.infer<S> {
  if (!isRecord(value)) throw loadError(`a ${shape.dataset} row must be a JSON object`, at);
  const parsed = shape.schema.safeParse(value);
  if (!parsed.success) {
    const id = typeof value.instance_id === 'string' ? ` ${value.instance_id}` : '';
    throw loadError(`invalid ${shape.dataset} row${id}:\n${z.prettifyError(parsed.error)}`, at);
  }
  const known = new Set([...Object.keys(shape.schema.shape), ...shape.unused]);
  for (const field of Object.keys(value)) {
    if (!known.has(field)) unknown.add(shape.dataset, field, at);
  }
  return parsed.data;
}

/** A list published either as a JSON array or as a JSON-encoded string of one (SWE-bench does both). */
export const PublishedList = z.preprocess((v) => {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v) as unknown;
  } catch {
    return v;
  }
}, z.array(z.string()));

/** The files a unified diff changes, as `b/` paths (deleted files left out). */
export function patchFiles(patch: string): string[] {
  const files = new Set<string>();
  for (const m of patch.matchAll(/^\+\+\+ b\/(.+?)\s*$/gm)) if (m[1]) files.add(m[1]);
  if (files.size === 0) {
    for (const m of patch.matchAll(/^diff --git a\/\S+ b\/(\S+)/gm)) if (m[1]) files.add(m[1]);
  }
  return [...files];
}

/** A word quoted for /bin/sh. */
export function shellQuote(word: string): string {
  return /^[\w./:=@+-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** The closest of `candidates` to `key` within a small edit distance, for "did you mean". */
export function closestKey(key: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(key.length / 3)) + 1;
  for (const candidate of candidates) {
    const d = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current.push(
        Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost),
      );
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/** The fields every SWE-bench-style row carries, under the same names in our task model. */
export interface SweBenchCore {
  instance_id: string;
  repo: string;
  base_commit: string;
  problem_statement: string;
  patch: string;
  test_patch: string;
  FAIL_TO_PASS: string[];
  PASS_TO_PASS: string[];
}

/** Those fields of `row`, copied (and nothing else of it). */
export function sweBenchCore(row: SweBenchCore): SweBenchCore {
  const { instance_id, repo, base_commit, problem_statement, patch, test_patch } = row;
  return {
    instance_id,
    repo,
    base_commit,
    problem_statement,
    patch,
    test_patch,
    FAIL_TO_PASS: row.FAIL_TO_PASS,
    PASS_TO_PASS: row.PASS_TO_PASS,
  };
}
