/**
 * The one error every task loader throws: it names the file, the JSONL line, JSON array row or
 * Harbor task folder, and in its message the field at fault, so a bad dataset is fixed in one look.
 */
export class TaskLoadError extends Error {
  override name = 'TaskLoadError';
  constructor(
    message: string,
    readonly file: string,
    /** 1-based line of a JSONL file. */
    readonly line?: number,
    /** 0-based index in a JSON file holding an array of tasks. */
    readonly row?: number,
  ) {
    super(`${where({ file, line, row })}: ${message}`);
  }
}

/** Where one task came from. */
export interface RowLocation {
  file: string;
  /** 1-based line of a JSONL file. */
  line?: number;
  /** 0-based index in a JSON array. */
  row?: number;
}

export function where({ file, line, row }: RowLocation): string {
  if (line !== undefined) return `${file}:${line}`;
  if (row !== undefined) return `${file} [row ${row}]`;
  return file;
}

export function loadError(message: string, at: RowLocation): TaskLoadError {
  return new TaskLoadError(message, at.file, at.line, at.row);
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
