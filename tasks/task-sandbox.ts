/**
 * What a sandbox for a task is made from: the task's image, its workspace as a prepared host
 * directory with its content key, and the image path the workspace stands for. The agent's
 * sandbox and the reward's take the same, so the reward runs where the agent worked, except for
 * the task's hidden image paths (`environment.hidden_paths`): the agent's view goes without
 * them, whited out of its root or left out of its workspace copy; the reward's has them.
 */
import { posix } from 'node:path';
import type { SandboxSpec } from '../sandbox/provider.js';
import type { ImageStore } from '../sandbox/images/types.js';
import { imageWorkspaceDir } from './image-workspace.js';
import type { Task } from './schema.js';
import { workspaceKeyOf } from './workspace-key.js';
import { defaultWorkspaceCacheDir, workspaceDirOf, WorkspaceError } from './workspace.js';

export interface TaskSandboxSources {
  /** Where bundles, tarballs and image workspaces are unpacked. Default `defaultWorkspaceCacheDir()`. */
  workspaceCacheDir?: string;
  /** Resolves a task's `environment.image`; required for `image` workspaces. Default none. */
  images?: ImageStore;
}

/** Whose sandbox it is: only the reward's sees the task's hidden image paths. */
export type SandboxView = 'agent' | 'reward';

export type TaskSandboxSpec = Pick<
  SandboxSpec,
  'image' | 'workspaceDir' | 'workspaceKey' | 'workspaceLink' | 'hiddenImagePaths'
>;

/** The task's hidden paths split into those inside its image workspace (relative) and the rest. */
export function hiddenPathsOf(task: Task): { inWorkspace: string[]; outside: string[] } {
  const inWorkspace: string[] = [];
  const outside: string[] = [];
  const root = task.workspace.kind === 'image' ? task.workspace.path : undefined;
  for (const path of task.environment.hidden_paths) {
    // The schema refuses a hidden path on or above the workspace path.
    if (root !== undefined && path.startsWith(`${root}/`)) {
      inWorkspace.push(posix.relative(root, path));
    } else outside.push(path);
  }
  return { inWorkspace, outside };
}

/** The image and workspace fields of a sandbox spec for `task`, as `view` is to see it. */
export async function taskSandboxSpec(
  task: Task,
  view: SandboxView,
  sources: TaskSandboxSources = {},
): Promise<TaskSandboxSpec> {
  const cacheDir = sources.workspaceCacheDir ?? defaultWorkspaceCacheDir();
  const { image } = task.environment;
  const hidden = hiddenPathsOf(task);
  let workspaceDir: string;
  if (task.workspace.kind === 'image') {
    if (image === undefined || sources.images === undefined) {
      throw new WorkspaceError(
        `task ${task.instance_id}: an image workspace needs environment.image and an image store`,
      );
    }
    workspaceDir = await imageWorkspaceDir(
      await sources.images.resolve(image),
      task.workspace.path,
      cacheDir,
      view === 'agent' ? hidden.inWorkspace : [],
    );
  } else {
    workspaceDir = await workspaceDirOf(task, cacheDir);
  }
  return {
    workspaceDir,
    workspaceKey: await workspaceKeyOf(workspaceDir, cacheDir),
    ...(image !== undefined ? { image } : {}),
    ...(task.workspace.kind === 'image' ? { workspaceLink: task.workspace.path } : {}),
    ...(view === 'agent' && hidden.outside.length > 0 ? { hiddenImagePaths: hidden.outside } : {}),
  };
}
