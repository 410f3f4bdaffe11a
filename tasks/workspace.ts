/**
 * The host directory a task's sandbox is copied from. A `dir` workspace is used as it is; a git
 * bundle is cloned and its `base_commit` checked out; a tarball is unpacked. Bundles and tarballs
 * land in a cache keyed by their source, size, mtime and base commit, so each is unpacked once per
 * worker. A `dir` holding a nested repository is copied there too. Every `.git` below the top
 * level is removed from what lands there (a nested repository's history could hold the fix), and
 * the top-level `.git` is dropped too: the sandbox provider makes a fresh single-commit repository
 * of the files (SandboxSpec.initGitRepo). Cached copies are keyed by the source's top-level mtime:
 * edit a `dir` below its top level and the cache must be cleared by hand.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { Task } from './schema.js';

const execFileAsync = promisify(execFile);

/** A workspace source cannot be turned into a directory (missing file, bad bundle, bad commit). */
export class WorkspaceError extends Error {
  override name = 'WorkspaceError';
}

/** Where unpacked bundles and tarballs are kept: `$TMPDIR/agent-rollout-workspaces`. */
export function defaultWorkspaceCacheDir(): string {
  return join(tmpdir(), 'agent-rollout-workspaces');
}

/** Git with no user or system configuration, so a host's settings cannot change the checkout. */
const GIT_ENV = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: '/nonexistent',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
};

const preparing = new Map<string, Promise<string>>();

/**
 * The host directory holding the task's files at its base commit, ready to be the sandbox's
 * `workspaceDir`. `cacheDir` (default `defaultWorkspaceCacheDir()`) holds unpacked sources.
 */
export async function workspaceDirOf(
  task: Pick<Task, 'workspace' | 'base_commit'>,
  cacheDir: string = defaultWorkspaceCacheDir(),
): Promise<string> {
  const { workspace } = task;
  if (workspace.kind === 'image') {
    throw new WorkspaceError(
      `workspace ${workspace.path} lies in the task's image: taskSandboxSpec (tasks/task-sandbox.ts) copies it out`,
    );
  }
  const source = resolve(workspace.path);
  const info = await stat(source).catch(() => undefined);
  if (!info) throw new WorkspaceError(`workspace ${workspace.kind} ${source} does not exist`);
  if (workspace.kind === 'dir') {
    if (!info.isDirectory()) throw new WorkspaceError(`workspace ${source} is not a directory`);
    // A nested repository's .git would reach the sandbox with its history: copy without it.
    if (!(await hasNestedGit(source, info.mtimeMs))) return source;
  } else if (!info.isFile()) {
    throw new WorkspaceError(`workspace ${workspace.kind} ${source} is not a file`);
  }
  const key = createHash('sha256')
    .update(JSON.stringify([workspace, source, info.size, info.mtimeMs, task.base_commit]))
    .digest('hex')
    .slice(0, 24);
  const target = join(resolve(cacheDir), `${workspace.kind}-${key}`);
  let pending = preparing.get(target);
  if (!pending) {
    pending = unpack(task, source, target).finally(() => preparing.delete(target));
    preparing.set(target, pending);
  }
  return pending;
}

async function unpack(
  task: Pick<Task, 'workspace' | 'base_commit'>,
  source: string,
  target: string,
): Promise<string> {
  if (
    await stat(target).then(
      (s) => s.isDirectory(),
      () => false,
    )
  )
    return target;
  const scratch = `${target}.${randomBytes(4).toString('hex')}.tmp`;
  await mkdir(scratch, { recursive: true });
  try {
    const { workspace } = task;
    if (workspace.kind === 'git-bundle') {
      await run('git', ['clone', '--quiet', '--no-checkout', '--', source, scratch], 'git clone');
      await run(
        'git',
        [
          '-C',
          scratch,
          '-c',
          'advice.detachedHead=false',
          'checkout',
          '--quiet',
          '--detach',
          task.base_commit,
        ],
        `git checkout ${task.base_commit}`,
      );
    } else if (workspace.kind === 'tarball') {
      await run(
        'tar',
        [
          '-xf',
          source,
          '-C',
          scratch,
          '--no-same-owner',
          '--no-same-permissions',
          `--strip-components=${workspace.strip_components}`,
        ],
        'tar',
      );
    } else {
      await run('cp', ['-a', '--', `${source}/.`, scratch], 'cp');
    }
    await dropGitDirs(scratch);
    await publishScratch(scratch, target);
    return target;
  } catch (err) {
    await rm(scratch, { recursive: true, force: true });
    throw err;
  }
}

/** Removes every `.git` in `dir`: a repository's history could hold the fix. */
export async function dropGitDirs(dir: string): Promise<void> {
  await run(
    'find',
    [dir, '-depth', '-name', '.git', '-exec', 'rm', '-rf', '--', '{}', '+'],
    'removing .git',
  );
}

/** Moves a finished `scratch` copy to `target`; when another process got there first, keeps theirs. */
export async function publishScratch(scratch: string, target: string): Promise<void> {
  await rename(scratch, target).catch(async (err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
    await rm(scratch, { recursive: true, force: true });
  });
}

/** Directory → whether it holds a nested `.git`, per mtime: one walk per directory and process. */
const nestedGit = new Map<string, { mtimeMs: number; found: Promise<boolean> }>();

function hasNestedGit(dir: string, mtimeMs: number): Promise<boolean> {
  const known = nestedGit.get(dir);
  if (known?.mtimeMs === mtimeMs) return known.found;
  const found = findNestedGit(dir);
  nestedGit.set(dir, { mtimeMs, found });
  return found;
}

async function findNestedGit(dir: string): Promise<boolean> {
  const { stdout } = await execFileAsync('find', [
    dir,
    '-mindepth',
    '1',
    '-path',
    join(dir, '.git'),
    '-prune',
    '-o',
    '-name',
    '.git',
    '-print',
    '-quit',
  ]);
  return stdout.trim() !== '';
}

async function run(file: string, args: string[], what: string): Promise<void> {
  try {
    await execFileAsync(file, args, { env: GIT_ENV, maxBuffer: 4 * 1024 * 1024 });
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr?.trim();
    throw new WorkspaceError(`${what} failed: ${stderr || (err as Error).message}`, { cause: err });
  }
}
