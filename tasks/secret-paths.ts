import { statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Task } from './schema.js';

/**
 * Host paths an agent's sandbox must hide for `task` loaded from `taskSource`: the folder of the
 * task files (gold patches, hidden tests, sibling tasks), a bundle or tarball workspace source
 * (a bundle's history can hold the fix) and a script reward's verifier folder, wherever they
 * are (an image workspace is a path in the image, not on the host). The agent gets its
 * workspace as a copy, never from these. A task file at the top of the filesystem cannot have
 * its folder hidden; hide it alone then.
 */
export function secretPathsOf(taskSource: string, task: Task): string[] {
  const paths =
    task.workspace.kind === 'dir' || task.workspace.kind === 'image'
      ? []
      : [resolve(task.workspace.path)];
  // A script reward's verifier knows what passes.
  if (task.reward.kind === 'script') paths.push(resolve(task.reward.dir));
  const source = resolve(taskSource);
  const isDir = statSync(source, { throwIfNoEntry: false })?.isDirectory() ?? false;
  const folder = isDir ? source : dirname(source);
  paths.push(folder === '/' ? source : folder);
  return paths;
}
