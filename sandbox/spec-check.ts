/**
 * What a create makes of its spec before touching the host: the checks that make a spec invalid
 * (never retried), the limits in force, and the plan of the sandbox's root.
 */
import { realpath, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { ImageRoot } from './images/types.js';
import { checkSandboxPath, isUnder, readableBy, SANDBOX_TMP, WORKSPACE } from './mounts.js';
import { InvalidSandboxSpecError, type SandboxLimits, type SandboxSpec } from './provider.js';
import type { SandboxUser } from './runner.js';
import type { RootPlan } from './shared-roots.js';

export interface ReadOnlyMount {
  hostPath: string;
  sandboxPath: string;
}

/** Validates the spec; returns the read-only mounts with real host paths. */
export async function checkSpec(
  workspaceDir: string,
  spec: SandboxSpec,
  user: SandboxUser,
): Promise<ReadOnlyMount[]> {
  const isDir = await stat(workspaceDir).then(
    (s) => s.isDirectory(),
    () => false,
  );
  if (!isDir) throw new InvalidSandboxSpecError(`workspaceDir is not a directory: ${workspaceDir}`);
  if ((spec.hiddenPaths ?? []).some((p) => resolve(p) === '/'))
    throw new InvalidSandboxSpecError('cannot hide the whole root');
  if (spec.workspaceKey === '') throw new InvalidSandboxSpecError('workspaceKey must not be empty');
  // Real paths, so a hidden path inside a mount is found whichever symlinks lead to either.
  const mounts = await Promise.all(
    (spec.readOnlyMounts ?? []).map(async (m) => ({
      hostPath: await realpath(resolve(m.hostPath)).catch(() => resolve(m.hostPath)),
      sandboxPath: m.sandboxPath,
    })),
  );
  const own = [WORKSPACE, SANDBOX_TMP];
  for (const m of mounts) {
    checkSandboxPath(m.sandboxPath);
    if (own.some((p) => isUnder(m.sandboxPath, p) || isUnder(p, m.sandboxPath))) {
      throw new InvalidSandboxSpecError(`cannot mount over ${m.sandboxPath}`);
    }
    const exists = await stat(m.hostPath).then(
      () => true,
      () => false,
    );
    if (!exists) throw new InvalidSandboxSpecError(`read-only mount source is missing: ${m.hostPath}`);
    if (!readableBy(m.hostPath, user)) {
      throw new InvalidSandboxSpecError(
        `read-only mount source is not readable by the sandbox user: ${m.hostPath}`,
      );
    }
  }
  if (spec.workspaceLink !== undefined) {
    const link = spec.workspaceLink;
    checkSandboxPath(link);
    const taken = [...own, ...mounts.map((m) => m.sandboxPath)];
    if (taken.some((p) => isUnder(p, link) || isUnder(link, p))) {
      throw new InvalidSandboxSpecError(`workspaceLink ${link} overlaps a mount`);
    }
  }
  const taken = [...mounts.map((m) => m.sandboxPath), ...(spec.workspaceLink ? [spec.workspaceLink] : [])];
  for (const path of spec.writableDirs ?? []) {
    checkSandboxPath(path);
    if (own.some((p) => isUnder(path, p) || isUnder(p, path))) {
      throw new InvalidSandboxSpecError(`${path} is writable already (under /workspace or /tmp)`);
    }
    if (taken.some((p) => isUnder(p, path) || isUnder(path, p))) {
      throw new InvalidSandboxSpecError(`writable directory ${path} overlaps a mount`);
    }
  }
  for (const path of spec.hiddenImagePaths ?? []) {
    checkSandboxPath(path);
    const points = [...own, ...taken, ...(spec.writableDirs ?? [])];
    if (points.some((p) => isUnder(p, path) || isUnder(path, p))) {
      throw new InvalidSandboxSpecError(`hidden image path ${path} overlaps a mount, the workspace link or a writable directory`);
    }
  }
  return mounts;
}

/** `defaults` with the spec's limits over them; a limit that cannot work is an invalid spec. */
export function limitsOf(
  limits: SandboxLimits = {},
  defaults: Required<SandboxLimits>,
): Required<SandboxLimits> {
  const merged = { ...defaults };
  for (const [k, v] of Object.entries(limits) as [keyof SandboxLimits, number | undefined][]) {
    if (v === undefined) continue;
    if (!(Number.isFinite(v) && v > 0)) throw new InvalidSandboxSpecError(`limits.${k} must be > 0`);
    merged[k] = v;
  }
  return merged;
}

/** The root a sandbox of `image` with these mounts needs: its mount points, its workspace link. */
export async function rootPlanOf(
  image: ImageRoot,
  readOnlyMounts: ReadOnlyMount[],
  workspaceLink: string | undefined,
  writableDirs: string[] = [],
  hiddenImagePaths: string[] = [],
): Promise<RootPlan> {
  return {
    imageLayers: image.layers,
    mountPoints: [
      { path: '/proc', file: false },
      { path: '/dev', file: false },
      { path: SANDBOX_TMP, file: false },
      { path: WORKSPACE, file: false },
      ...(await Promise.all(
        readOnlyMounts.map(async (m) => ({
          path: m.sandboxPath,
          file: !(await stat(m.hostPath)).isDirectory(),
        })),
      )),
      ...writableDirs.map((path) => ({ path, file: false })),
    ],
    link: workspaceLink ? { path: workspaceLink, target: WORKSPACE } : undefined,
    ...(hiddenImagePaths.length > 0 ? { whiteouts: hiddenImagePaths } : {}),
  };
}
