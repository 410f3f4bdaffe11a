/**
 * The content identity of a task's workspace directory (what `workspaceDirOf` returns), given to
 * the sandbox provider as `SandboxSpec.workspaceKey` so that it prepares the workspace layer once
 * and shares it between sandboxes instead of copying the files for each.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { defaultWorkspaceCacheDir, WorkspaceError } from './workspace.js';

/**
 * An unpacked copy in `cacheDir` (default `defaultWorkspaceCacheDir()`) is named after its source
 * (path, size, mtime, base commit): its path is the key. A directory used in place is keyed on
 * its path and a stamp of its whole tree (every entry's path, type, size and mtime), so an edit
 * anywhere below it makes another key; the stamp costs one `find` over the tree.
 */
export async function workspaceKeyOf(
  dir: string,
  cacheDir: string = defaultWorkspaceCacheDir(),
): Promise<string> {
  const abs = resolve(dir);
  if (abs.startsWith(`${resolve(cacheDir)}/`)) return `cache:${abs}`;
  return `dir:${abs}:${await treeStamp(abs)}`;
}

/** sha256 over `find`'s listing of the tree, streamed. */
function treeStamp(dir: string): Promise<string> {
  return new Promise((done, fail) => {
    const hash = createHash('sha256');
    const find = spawn('find', [dir, '-printf', '%P\\0%y\\0%s\\0%T@\\0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    find.stdout.on('data', (chunk: Buffer) => hash.update(chunk));
    find.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    find.on('error', (err) => fail(new WorkspaceError(`cannot stamp ${dir}: ${err.message}`, { cause: err })));
    find.on('close', (code) => {
      if (code === 0) done(hash.digest('hex').slice(0, 32));
      else fail(new WorkspaceError(`cannot stamp ${dir}: ${stderr.trim() || `find exited ${code}`}`));
    });
  });
}
