/**
 * What a sandbox for a task is made from: the task's image, its workspace as a prepared host
 * directory with its content key, and the image path the workspace stands for. The agent's
 * sandbox and the reward's take the same, so the reward runs where the agent worked.
 */
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

export type TaskSandboxSpec = Pick<
  SandboxSpec,
  'image' | 'workspaceDir' | 'workspaceKey' | 'workspaceLink'
>;

/** The image and workspace fields of a sandbox spec for `task`. */
export async function taskSandboxSpec(
  task: Task,
  sources: TaskSandboxSources = {},
): Promise<TaskSandboxSpec> {
  const cacheDir = sources.workspaceCacheDir ?? defaultWorkspaceCacheDir();
  const { image } = task.environment;
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
    );
  } else {
    workspaceDir = await workspaceDirOf(task, cacheDir);
  }
  return {
    workspaceDir,
    workspaceKey: await workspaceKeyOf(workspaceDir, cacheDir),
    ...(image !== undefined ? { image } : {}),
    ...(task.workspace.kind === 'image' ? { workspaceLink: task.workspace.path } : {}),
  };
}
