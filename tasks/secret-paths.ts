import { statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Task } from './schema.js';

/**
 * Host paths an agent's sandbox must hide for `task` loaded from `taskSource`: the folder of the
 * task files (gold patches, hidden tests, sibling tasks) and a bundle or tarball workspace source
 * (a bundle's history can hold the fix). The agent gets its workspace as a copy, never from these.
 * A task file at the top of the filesystem cannot have its folder hidden; hide it alone then.
 */
export function secretPathsOf(taskSource: string, task: Task): string[] {
  const { kind } = task.workspace;
  // An image workspace's path is inside the image, not on the host.
  const paths = kind === 'git-bundle' || kind === 'tarball' ? [resolve(task.workspace.path)] : [];
  const source = resolve(taskSource);
  const isDir = statSync(source, { throwIfNoEntry: false })?.isDirectory() ?? false;
  const folder = isDir ? source : dirname(source);
  paths.push(folder === '/' ? source : folder);
  return paths;
}
