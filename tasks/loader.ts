/**
 * Task loaders: our own format (the built-in pack, one folder per task, and JSON/JSONL task
 * files) and the published datasets of tasks/datasets/ (SWE-bench, SWE-rebench, SWE-Gym, Harbor;
 * R2E-Gym is recognised and refused with its reason). Every task is validated with `TaskSchema`;
 * anything wrong surfaces as a `TaskLoadError` that names the file, the JSONL line, JSON array
 * row or Harbor folder, and the field. Our own format is strict (an unknown key is an error, with
 * the closest known key suggested); a published format's unknown field is a warning, reported
 * once per file through `warn` and in the load report. Workspaces are checked to exist here;
 * whether they unpack and the patches apply is tasks/datasets/checks.ts, run before a batch.
 *
 * A task source is a path, optionally prefixed by its format: `swe-rebench:/data/train.jsonl`.
 * Without a prefix the format is detected from the data's shape (see `detectFormat`). The source
 * string reaches the workers unchanged, so they load the same tasks the same way.
 */
import { readdir, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { errorMessage, loadError, TaskLoadError, type RowLocation } from './load-error.js';
import { closestKey } from './datasets/published.js';
import { harborTaskDirs, mapHarborTask } from './datasets/harbor.js';
import type { DatasetOptions } from './datasets/options.js';
import { isR2eGymRow, mapR2eGymRow } from './datasets/r2e-gym.js';
import { SWE_GYM_REPOS } from './datasets/repo-tests.js';
import { TASK_FORMATS, UnknownFields, warnToStderr, type TaskFormat, type Warn } from './datasets/report.js';
import { isRecord, parseJson, readRows, readText, type Row } from './datasets/rows.js';
import { mapSweBenchRow } from './datasets/swe-bench.js';
import { mapSweGymRow } from './datasets/swe-gym.js';
import { mapSweRebenchRow } from './datasets/swe-rebench.js';
import { EnvironmentSchema, RewardSpecSchema, TaskSchema, WorkspaceSchema, type Task } from './schema.js';

export { TaskLoadError } from './load-error.js';
export { TASK_FORMATS, type TaskFormat } from './datasets/report.js';

export interface LoadOptions extends DatasetOptions {
  /** The source's format; `auto` detects it from the data. Default: the source's prefix, else `auto`. */
  format?: 'auto' | TaskFormat;
  /** Receives one line per unknown published field and file. Default: a line on stderr. */
  warn?: Warn;
}

/** A task and where it was read from. */
export interface LocatedTask {
  task: Task;
  at: RowLocation;
}

export interface LoadReport {
  /** The source's path, resolved. */
  path: string;
  format: TaskFormat;
  /** Whether `format` was detected rather than given. */
  detected: boolean;
  tasks: LocatedTask[];
  /** The unknown published fields, one line each (also passed to `warn`). */
  warnings: string[];
}

/** Absolute path of the built-in task pack shipped with this package. */
export function builtinPackDir(): string {
  return fileURLToPath(new URL('./pack', import.meta.url));
}

const PREFIX = new RegExp(`^(${TASK_FORMATS.join('|')}):(.+)$`);

/** A task source's format prefix, if any, and its path. */
export function parseTaskSource(source: string): { format?: TaskFormat; path: string } {
  const m = PREFIX.exec(source);
  if (!m?.[1] || !m[2]) return { path: source };
  return { format: m[1] as TaskFormat, path: m[2] };
}

/** The source string carrying `format`: our own format needs no prefix. */
export function formatTaskSource(format: TaskFormat, path: string): string {
  return format === 'agent-rollout' ? path : `${format}:${path}`;
}

/** The tasks of `source` (see `loadTaskReport`). */
export async function loadTasks(source: string, options: LoadOptions = {}): Promise<Task[]> {
  return (await loadTaskReport(source, options)).tasks.map((t) => t.task);
}

/**
 * The tasks of `source` (a pack or Harbor directory, or a JSON/JSONL file, optionally prefixed by
 * its format), the format read and the warnings.
 */
export async function loadTaskReport(source: string, options: LoadOptions = {}): Promise<LoadReport> {
  const parsed = parseTaskSource(source);
  const path = resolve(parsed.path);
  const info = await stat(path).catch(() => undefined);
  if (info === undefined) throw new TaskLoadError('no such file or directory', path);
  const given = options.format !== undefined && options.format !== 'auto' ? options.format : undefined;
  if (given !== undefined && parsed.format !== undefined && given !== parsed.format) {
    throw new TaskLoadError(`format ${given} was asked for a source prefixed ${parsed.format}:`, path);
  }
  const unknown = new UnknownFields();
  const explicit = given ?? parsed.format;
  let format: TaskFormat;
  let tasks: LocatedTask[];
  if (info.isDirectory()) {
    format = explicit ?? (await detectDirFormat(path));
    if (format === 'harbor') tasks = await loadHarbor(path, options, unknown);
    else if (format === 'agent-rollout') tasks = await loadPack(path);
    else throw new TaskLoadError(`a ${format} source is a .json or .jsonl file, not a directory`, path);
  } else {
    const rows = await readRows(path);
    format = explicit ?? detectRowFormat(rows);
    if (format === 'harbor') throw new TaskLoadError('a Harbor source is a task folder or a folder of them', path);
    tasks = await mapRows(rows, format, options, unknown);
  }
  checkUnique(tasks);
  const warnings = unknown.messages();
  const warn = options.warn ?? warnToStderr;
  for (const w of warnings) warn(w);
  return { path, format, detected: explicit === undefined, tasks, warnings };
}

/** A folder holding task.toml (itself or in subfolders) is Harbor; otherwise our task pack. */
async function detectDirFormat(dir: string): Promise<TaskFormat> {
  return (await harborTaskDirs(dir)).length > 0 ? 'harbor' : 'agent-rollout';
}

/**
 * The format of a file's rows, from its first row: our `workspace` field → ours;
 * `install_config` → SWE-rebench; `docker_image` with `expected_output_json` or `commit_hash` →
 * R2E-Gym; SWE-bench fields without a workspace → SWE-Gym when every row's repository is one of
 * SWE-Gym's, else SWE-bench. Anything else is read as ours, whose errors then say what is missing.
 */
function detectRowFormat(rows: Row[]): TaskFormat {
  const first = rows.find((r) => isRecord(r.value))?.value;
  if (!isRecord(first) || 'workspace' in first) return 'agent-rollout';
  if ('install_config' in first) return 'swe-rebench';
  if (isR2eGymRow(first)) return 'r2e-gym';
  if ('instance_id' in first && 'problem_statement' in first && 'patch' in first) {
    const gym = new Set(SWE_GYM_REPOS);
    const all = rows.every((r) => isRecord(r.value) && typeof r.value.repo === 'string' && gym.has(r.value.repo));
    return all ? 'swe-gym' : 'swe-bench';
  }
  return 'agent-rollout';
}

async function mapRows(
  rows: Row[],
  format: Exclude<TaskFormat, 'harbor'>,
  options: DatasetOptions,
  unknown: UnknownFields,
): Promise<LocatedTask[]> {
  const located: LocatedTask[] = [];
  for (const { value, at } of rows) {
    let raw: unknown;
    if (format === 'agent-rollout') raw = value;
    else if (format === 'swe-bench') raw = mapSweBenchRow(value, at, options, unknown);
    else if (format === 'swe-gym') raw = mapSweGymRow(value, at, options, unknown);
    else if (format === 'swe-rebench') raw = mapSweRebenchRow(value, at, options, unknown);
    else raw = mapR2eGymRow(value, at, options, unknown);
    const task = withAbsoluteWorkspace(validate(raw, at), dirname(at.file));
    await checkWorkspace(task, at);
    located.push({ task, at });
  }
  return located;
}

async function loadHarbor(dir: string, options: DatasetOptions, unknown: UnknownFields): Promise<LocatedTask[]> {
  const located: LocatedTask[] = [];
  for (const taskDir of await harborTaskDirs(dir)) {
    const at = { file: join(taskDir, 'task.toml') };
    located.push({ task: validate(await mapHarborTask(taskDir, options, unknown), at), at });
  }
  return located;
}

/**
 * Every subfolder holding a task.json: the gold fix comes from gold.patch, the hidden tests from
 * test.patch and the workspace is its repo/ folder, so the task.json itself never carries them.
 */
export async function loadTaskPack(dir: string): Promise<Task[]> {
  const tasks = await loadPack(resolve(dir));
  checkUnique(tasks);
  return tasks.map((t) => t.task);
}

async function loadPack(root: string): Promise<LocatedTask[]> {
  const entries = await readdir(root, { withFileTypes: true }).catch((err: unknown) => {
    throw new TaskLoadError(`cannot read task pack: ${errorMessage(err)}`, root);
  });
  const tasks: LocatedTask[] = [];
  for (const entry of entries.filter((e) => e.isDirectory()).sort(byName)) {
    const folder = join(root, entry.name);
    const file = join(folder, 'task.json');
    if (!(await isFile(file))) continue;
    const at = { file };
    const raw = parseJson(await readText(file), at);
    if (!isRecord(raw)) throw new TaskLoadError('task.json must hold one JSON object', file);
    const task = validate(
      {
        ...raw,
        patch: await readText(join(folder, 'gold.patch')),
        test_patch: await readText(join(folder, 'test.patch')),
        workspace: { kind: 'dir', path: join(folder, 'repo') },
      },
      at,
    );
    if (task.instance_id !== entry.name) {
      throw new TaskLoadError(`instance_id "${task.instance_id}" differs from its folder name "${entry.name}"`, file);
    }
    await checkWorkspace(task, at);
    tasks.push({ task, at });
  }
  return tasks;
}

/**
 * A `.json` file (one task or an array of tasks) or a `.jsonl` file (one task per line) in our
 * format; a relative `workspace.path` is relative to the file's folder.
 */
export async function loadTaskFile(file: string): Promise<Task[]> {
  const path = resolve(file);
  const tasks = await mapRows(await readRows(path), 'agent-rollout', {}, new UnknownFields());
  checkUnique(tasks);
  return tasks.map((t) => t.task);
}

/** The keys of our format, at the top and in each nested object, for "did you mean". */
const KNOWN_KEYS: Record<string, string[]> = {
  '': Object.keys(TaskSchema.shape),
  workspace: [...new Set(WorkspaceSchema.options.flatMap((o) => Object.keys(o.shape)))],
  reward: [...new Set(RewardSpecSchema.options.flatMap((o) => Object.keys(o.shape)))],
  environment: Object.keys(EnvironmentSchema.shape),
  timeouts: Object.keys(TaskSchema.shape.timeouts.unwrap().shape),
};

/** Zod's issues, each with the field it is about, the task's id, and for a misspelt key the one meant. */
function validate(raw: unknown, at: RowLocation): Task {
  const parsed = TaskSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const id = isRecord(raw) && typeof raw.instance_id === 'string' ? ` ${raw.instance_id}` : '';
  const hints: string[] = [];
  for (const issue of parsed.error.issues) {
    if (issue.code !== 'unrecognized_keys' || issue.path.length > 1) continue;
    const parent = issue.path.join('.');
    for (const key of issue.keys) {
      const meant = closestKey(key, KNOWN_KEYS[parent] ?? []);
      const name = parent === '' ? key : `${parent}.${key}`;
      hints.push(meant ? `unknown key "${name}": did you mean "${meant}"?` : `unknown key "${name}"`);
    }
  }
  const message = [`invalid task${id}:`, z.prettifyError(parsed.error), ...hints].join('\n');
  throw loadError(message, at);
}

function withAbsoluteWorkspace(task: Task, base: string): Task {
  if (task.workspace.kind === 'image' || isAbsolute(task.workspace.path)) return task;
  return { ...task, workspace: { ...task.workspace, path: resolve(base, task.workspace.path) } };
}

async function checkWorkspace(task: Task, at: RowLocation): Promise<void> {
  const { kind, path } = task.workspace;
  if (kind === 'image') return;
  const info = await stat(path).catch(() => undefined);
  const ok = kind === 'dir' ? info?.isDirectory() : info?.isFile();
  if (!ok) {
    const what = kind === 'dir' ? 'workspace directory' : `workspace ${kind} file`;
    throw loadError(`task ${task.instance_id}: workspace.path: ${what} ${path} does not exist`, at);
  }
  if (kind === 'tarball' && !/\.(?:tar|tar\.gz|tgz)$/.test(path)) {
    throw loadError(`task ${task.instance_id}: workspace.path: ${path} is not a .tar, .tar.gz or .tgz file`, at);
  }
}

function checkUnique(located: LocatedTask[]): void {
  const seen = new Set<string>();
  for (const { task, at } of located) {
    if (seen.has(task.instance_id)) throw loadError(`duplicate instance_id "${task.instance_id}"`, at);
    seen.add(task.instance_id);
  }
}

async function isFile(path: string): Promise<boolean> {
  const info = await stat(path).catch(() => undefined);
  return info?.isFile() ?? false;
}

function byName(a: { name: string }, b: { name: string }): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
