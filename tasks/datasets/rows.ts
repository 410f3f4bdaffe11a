/**
 * Reading a dataset file into rows, each with its location: a `.jsonl` file (one row per line,
 * blank lines skipped) or a `.json` file (one object, or an array of them).
 */
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { errorMessage, loadError, TaskLoadError, type RowLocation } from '../load-error.js';

export interface Row {
  value: unknown;
  at: RowLocation;
}

export async function readText(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
    throw new TaskLoadError(missing ? 'file not found' : `cannot read: ${errorMessage(err)}`, file);
  }
}

export function parseJson(text: string, at: RowLocation): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw loadError(`malformed JSON: ${errorMessage(err)}`, at);
  }
}

/** Every row of a `.json` or `.jsonl` file, in file order. */
export async function readRows(file: string): Promise<Row[]> {
  const ext = extname(file).toLowerCase();
  if (ext !== '.jsonl' && ext !== '.json') {
    throw new TaskLoadError(`unsupported task file type "${ext}" (expected .json or .jsonl)`, file);
  }
  const text = await readText(file);
  if (ext === '.jsonl') {
    const rows: Row[] = [];
    for (const [index, content] of text.split('\n').entries()) {
      if (content.trim() === '') continue;
      const at = { file, line: index + 1 };
      rows.push({ value: parseJson(content, at), at });
    }
    return rows;
  }
  const raw = parseJson(text, { file });
  if (!Array.isArray(raw)) return [{ value: raw, at: { file } }];
  return raw.map((value: unknown, row) => ({ value, at: { file, row } }));
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
