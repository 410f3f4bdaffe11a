/**
 * What can be checked of a task before its batch starts, so a broken dataset fails there and not
 * as a reward of 0 or an infrastructure error in every episode:
 *
 * - every FAIL_TO_PASS and PASS_TO_PASS id of a `log_parser` task has the shape its parser
 *   reports (tasks/reward/log-parsers/test-ids.ts);
 * - a git bundle holds `base_commit`, and a tarball unpacks (to something, with its
 *   `strip_components`);
 * - the gold patch and the test patch apply to the unpacked workspace (`git apply --check`),
 *   which catches a wrong base commit or strip_components.
 *
 * Image references are checked for form by TaskSchema at load; images are not pulled here.
 * Workspace checks unpack into the workspace cache (tasks/workspace.ts), which the first sandbox
 * reuses; their outcome is kept per workspace source and patch for the life of the process, and
 * at most `concurrency` run at once.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdir, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { where, type RowLocation } from '../load-error.js';
import type { Task } from '../schema.js';
import { defaultWorkspaceCacheDir, WorkspaceError, workspaceDirOf } from '../workspace.js';
import { expectedTestId, isTestId } from '../reward/log-parsers/index.js';

export interface CheckFailure {
  at: RowLocation;
  instanceId: string;
  /** The task field at fault, e.g. `base_commit`, `workspace.strip_components`, `FAIL_TO_PASS`. */
  field: string;
  message: string;
}

export interface CheckOptions {
  /** Where bundles and tarballs are unpacked. Default `defaultWorkspaceCacheDir()`. */
  cacheDir?: string;
  /** Workspace checks running at once. Default 4. */
  concurrency?: number;
}

/** A failure as one line: `file:line: task x: field: message`. */
export function formatFailure(f: CheckFailure): string {
  return `${where(f.at)}: task ${f.instanceId}: ${f.field}: ${f.message}`;
}

/** Every failure of every task, in task order. */
export async function checkTasks(
  tasks: readonly { task: Task; at: RowLocation }[],
  options: CheckOptions = {},
): Promise<CheckFailure[]> {
  const cacheDir = options.cacheDir ?? defaultWorkspaceCacheDir();
  const results = await mapBounded(tasks, options.concurrency ?? 4, async ({ task, at }) => {
    const failures = testIdFailures(task).map((f) => ({ ...f, at, instanceId: task.instance_id }));
    const workspace = await workspaceFailures(task, cacheDir);
    return [...failures, ...workspace.map((f) => ({ ...f, at, instanceId: task.instance_id }))];
  });
  return results.flat();
}

type Finding = { field: string; message: string };

function testIdFailures(task: Task): Finding[] {
  const parser = task.log_parser;
  if (parser === undefined) return [];
  const findings: Finding[] = [];
  for (const field of ['FAIL_TO_PASS', 'PASS_TO_PASS'] as const) {
    for (const [i, id] of task[field].entries()) {
      if (!isTestId(parser, id)) {
        findings.push({
          field: `${field}[${i}]`,
          message: `${JSON.stringify(id)} is not a ${parser} test id (expected ${expectedTestId(parser)})`,
        });
      }
    }
  }
  return findings;
}

/** Outcomes by workspace source and patches: thousands of rows often share one bundle. */
const cache = new Map<string, Promise<Finding[]>>();

async function workspaceFailures(task: Task, cacheDir: string): Promise<Finding[]> {
  if (task.workspace.kind === 'image') return [];
  const info = await stat(task.workspace.path).catch(() => undefined);
  const key = createHash('sha256')
    .update(
      JSON.stringify([task.workspace, info?.size, info?.mtimeMs, task.base_commit, cacheDir, task.patch, task.test_patch]),
    )
    .digest('hex');
  let pending = cache.get(key);
  if (!pending) {
    pending = checkWorkspace(task, cacheDir);
    cache.set(key, pending);
  }
  return pending;
}

async function checkWorkspace(task: Task, cacheDir: string): Promise<Finding[]> {
  const { workspace } = task;
  let dir: string;
  try {
    dir = await workspaceDirOf(task, cacheDir);
  } catch (err) {
    if (!(err instanceof WorkspaceError)) throw err;
    const checkout = workspace.kind === 'git-bundle' && err.message.startsWith('git checkout');
    return [
      checkout
        ? { field: 'base_commit', message: `${task.base_commit} is not in the bundle ${workspace.path}: ${err.message}` }
        : { field: 'workspace.path', message: `${workspace.path} does not unpack: ${err.message}` },
    ];
  }
  if ((await readdir(dir)).length === 0) {
    return [{ field: fieldOfMismatch(task), message: `${workspace.path} unpacks to nothing` }];
  }
  const findings: Finding[] = [];
  for (const field of ['patch', 'test_patch'] as const) {
    if (task[field] === '') continue;
    const error = await applyCheck(dir, task[field]);
    if (error !== undefined) {
      findings.push({
        field,
        message: `${field === 'patch' ? 'the gold patch' : 'the test patch'} does not apply to the workspace (is ${fieldOfMismatch(task)} right?): ${error}`,
      });
    }
  }
  return findings;
}

/** The field most likely wrong when the patches do not fit the workspace. */
function fieldOfMismatch(task: Task): string {
  if (task.workspace.kind === 'tarball') return 'workspace.strip_components';
  if (task.workspace.kind === 'git-bundle') return 'base_commit';
  return 'workspace.path';
}

/** `git apply --check` of `patch` in `dir`, outside any enclosing repository; the error, if any. */
function applyCheck(dir: string, patch: string): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['apply', '--check', '-'], {
      cwd: dir,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: '/nonexistent',
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CONFIG_GLOBAL: '/dev/null',
        // A dir workspace inside a checkout must not be patched relative to that checkout's root.
        GIT_CEILING_DIRECTORIES: dirname(dir),
      },
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve(code === 0 ? undefined : stderr.trim().split('\n').slice(0, 3).join('; ')));
    child.stdin.end(patch);
  });
}

async function mapBounded<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return results;
}
