/**
 * Task loaders: the built-in pack (one folder per task) and SWE-bench style JSON/JSONL files.
 * Every task is validated with `TaskSchema`; anything wrong surfaces as a `TaskLoadError` that
 * names the file, the JSONL line or JSON array row, and the field, so a bad dataset is fixed in
 * one look. A workspace may be a directory, a git bundle or a tarball (tasks/workspace.ts); the
 * loader checks that it exists and leaves unpacking to the first sandbox that needs it.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { dirname, extname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { TaskSchema, type Task } from './schema.js';

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
    super(`${where(file, line, row)}: ${message}`);
  }
}

function where(file: string, line?: number, row?: number): string {
  if (line !== undefined) return `${file}:${line}`;
  if (row !== undefined) return `${file} [row ${row}]`;
  return file;
}

/** Absolute path of the built-in task pack shipped with this package. */
export function builtinPackDir(): string {
  return fileURLToPath(new URL('./pack', import.meta.url));
}

/** A directory is loaded as a task pack, a file as a JSON/JSONL dataset. */
export async function loadTasks(source: string): Promise<Task[]> {
  const path = resolve(source);
  const info = await stat(path).catch(() => undefined);
  if (info === undefined) throw new TaskLoadError('no such file or directory', path);
  return info.isDirectory() ? loadTaskPack(path) : loadTaskFile(path);
}

/**
 * Every subfolder holding a task.json: the gold fix comes from gold.patch, the hidden tests from
 * test.patch and the workspace is its repo/ folder, so the task.json itself never carries them.
 */
export async function loadTaskPack(dir: string): Promise<Task[]> {
  const root = resolve(dir);
  const entries = await readdir(root, { withFileTypes: true }).catch((err: unknown) => {
    throw new TaskLoadError(`cannot read task pack: ${errorMessage(err)}`, root);
  });
  const tasks: Task[] = [];
  for (const entry of entries.filter((e) => e.isDirectory()).sort(byName)) {
    const folder = join(root, entry.name);
    const taskFile = join(folder, 'task.json');
    if (!(await isFile(taskFile))) continue;
    const raw = parseJson(await readText(taskFile), taskFile);
    if (!isRecord(raw)) throw new TaskLoadError('task.json must hold one JSON object', taskFile);
    const task = validate(
      {
        ...raw,
        patch: await readText(join(folder, 'gold.patch')),
        test_patch: await readText(join(folder, 'test.patch')),
        workspace: { kind: 'dir', path: join(folder, 'repo') },
      },
      taskFile,
    );
    if (task.instance_id !== entry.name) {
      throw new TaskLoadError(
        `instance_id "${task.instance_id}" differs from its folder name "${entry.name}"`,
        taskFile,
      );
    }
    await checkWorkspace(task, taskFile);
    tasks.push(task);
  }
  checkUnique(tasks.map((task) => ({ task, file: join(root, task.instance_id, 'task.json') })));
  return tasks;
}

/**
 * A `.json` file (one task or an array of tasks) or a `.jsonl` file (one task per line) in
 * SWE-bench format plus our fields; a relative `workspace.path` is relative to the file's folder.
 */
export async function loadTaskFile(file: string): Promise<Task[]> {
  const path = resolve(file);
  const text = await readText(path);
  const base = dirname(path);
  const located: Located[] = [];
  const add = async (raw: unknown, line?: number, row?: number): Promise<void> => {
    const task = withAbsoluteWorkspace(validate(raw, path, line, row), base);
    await checkWorkspace(task, path, line, row);
    located.push({ task, file: path, line, row });
  };

  const ext = extname(path).toLowerCase();
  if (ext === '.jsonl') {
    const lines = text.split('\n');
    for (const [index, content] of lines.entries()) {
      if (content.trim() === '') continue;
      await add(parseJson(content, path, index + 1), index + 1);
    }
  } else if (ext === '.json') {
    const raw = parseJson(text, path);
    if (Array.isArray(raw)) {
      for (const [row, item] of raw.entries()) await add(item, undefined, row);
    } else {
      await add(raw);
    }
  } else {
    throw new TaskLoadError(`unsupported task file type "${ext}" (expected .json or .jsonl)`, path);
  }
  checkUnique(located);
  return located.map((l) => l.task);
}

interface Located {
  task: Task;
  file: string;
  line?: number;
  row?: number;
}

/** Zod's issues, each with the field it is about, and the task's id when it has one. */
function validate(raw: unknown, file: string, line?: number, row?: number): Task {
  const parsed = TaskSchema.safeParse(raw);
  if (!parsed.success) {
    const id = isRecord(raw) && typeof raw.instance_id === 'string' ? ` ${raw.instance_id}` : '';
    throw new TaskLoadError(
      `invalid task${id}:\n${z.prettifyError(parsed.error)}`,
      file,
      line,
      row,
    );
  }
  return parsed.data;
}

function withAbsoluteWorkspace(task: Task, base: string): Task {
  if (isAbsolute(task.workspace.path)) return task;
  return { ...task, workspace: { ...task.workspace, path: resolve(base, task.workspace.path) } };
}

async function checkWorkspace(
  task: Task,
  file: string,
  line?: number,
  row?: number,
): Promise<void> {
  const { kind, path } = task.workspace;
  const info = await stat(path).catch(() => undefined);
  const ok = kind === 'dir' ? info?.isDirectory() : info?.isFile();
  if (!ok) {
    const what = kind === 'dir' ? 'workspace directory' : `workspace ${kind} file`;
    throw new TaskLoadError(
      `task ${task.instance_id}: workspace.path: ${what} ${path} does not exist`,
      file,
      line,
      row,
    );
  }
  if (kind === 'tarball' && !/\.(?:tar|tar\.gz|tgz)$/.test(path)) {
    throw new TaskLoadError(
      `task ${task.instance_id}: workspace.path: ${path} is not a .tar, .tar.gz or .tgz file`,
      file,
      line,
      row,
    );
  }
}

function checkUnique(located: Located[]): void {
  const seen = new Set<string>();
  for (const { task, file, line, row } of located) {
    if (seen.has(task.instance_id)) {
      throw new TaskLoadError(`duplicate instance_id "${task.instance_id}"`, file, line, row);
    }
    seen.add(task.instance_id);
  }
}

function parseJson(text: string, file: string, line?: number): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new TaskLoadError(`malformed JSON: ${errorMessage(err)}`, file, line);
  }
}

async function readText(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
    throw new TaskLoadError(missing ? 'file not found' : `cannot read: ${errorMessage(err)}`, file);
  }
}

async function isFile(path: string): Promise<boolean> {
  const info = await stat(path).catch(() => undefined);
  return info?.isFile() ?? false;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function byName(a: { name: string }, b: { name: string }): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
