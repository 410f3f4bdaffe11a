/**
 * The prepared workspace layer: a copy of the workspace directory, made a fresh single-commit git
 * repository and owned by the sandbox user, that is the read-only lower layer of a sandbox's
 * workspace overlay. With a content key it is made once per key under the cache directory and
 * shared by every sandbox of that workspace; without one, each sandbox makes its own.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { SandboxUser } from './runner.js';

const execFileAsync = promisify(execFile);

/** Fixed identity and date so the base commit depends only on the files. */
const GIT_ENV: Record<string, string> = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: '/nonexistent',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'agent-rollout',
  GIT_AUTHOR_EMAIL: 'agent-rollout@localhost',
  GIT_AUTHOR_DATE: '2000-01-01T00:00:00+0000',
  GIT_COMMITTER_NAME: 'agent-rollout',
  GIT_COMMITTER_EMAIL: 'agent-rollout@localhost',
  GIT_COMMITTER_DATE: '2000-01-01T00:00:00+0000',
};

/** Empty template: no sample hooks; no reflog: nothing but the one commit to look at. */
const GIT_INIT_SCRIPT = `set -e
rm -rf .git
git -c core.logAllRefUpdates=false init -q --template= -b main
git -c core.logAllRefUpdates=false add -A
git -c core.logAllRefUpdates=false commit -q --allow-empty --no-verify --no-gpg-sign -m base`;

export interface LayerSource {
  workspaceDir: string;
  initGitRepo: boolean;
}

/** Copies the workspace into `target` (which must not exist) and makes it the sandbox user's. */
export async function prepareWorkspace(
  source: LayerSource,
  target: string,
  user: SandboxUser,
): Promise<void> {
  await mkdir(target);
  await execFileAsync('cp', ['-a', '--', `${source.workspaceDir}/.`, target]);
  if (source.initGitRepo) {
    await execFileAsync('/bin/sh', ['-c', GIT_INIT_SCRIPT], { cwd: target, env: GIT_ENV });
  }
  await execFileAsync('chown', ['-R', '--no-dereference', `${user.uid}:${user.gid}`, '--', target]);
}

/** Shared workspace layers under one cache directory, one per content key. */
export class WorkspaceLayerCache {
  /** Layers being made in this process, by directory: concurrent creates share one. */
  private readonly making = new Map<string, Promise<string>>();

  constructor(
    private readonly cacheDir: string,
    private readonly user: SandboxUser,
  ) {}

  /**
   * The layer of `key`, made from `source` if this cache lacks it. Made under a scratch name and
   * renamed into place, so another process racing on the same key never sees half a layer.
   */
  async layer(key: string, source: LayerSource): Promise<string> {
    const name = createHash('sha256')
      .update(JSON.stringify([key, source.initGitRepo]))
      .digest('hex')
      .slice(0, 32);
    const dir = join(this.cacheDir, name);
    let pending = this.making.get(dir);
    if (!pending) {
      pending = this.make(dir, source).finally(() => this.making.delete(dir));
      this.making.set(dir, pending);
    }
    return pending;
  }

  private async make(dir: string, source: LayerSource): Promise<string> {
    if (await isDir(dir)) return dir;
    await mkdir(this.cacheDir, { recursive: true, mode: 0o700 });
    const scratch = `${dir}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      await prepareWorkspace(source, scratch, this.user);
      await rename(scratch, dir).catch(async (err: NodeJS.ErrnoException) => {
        // Another process won the race with the same content: use its layer.
        if (!(await isDir(dir))) throw err;
      });
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
    return dir;
  }
}

async function isDir(path: string): Promise<boolean> {
  return stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );
}
