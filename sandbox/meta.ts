/**
 * The on-host record of one local sandbox: `<rootDir>/<id>/meta.json`. It is written last and
 * atomically when the sandbox is created, so a directory without it is a half-made sandbox.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SandboxInfo, SandboxLimits } from './provider.js';
import type { RootPlan } from './shared-roots.js';

export interface SandboxMeta {
  version: 1;
  id: string;
  idempotencyKey: string;
  labels: Record<string, string>;
  createdAt: number;
  expiresAt: number;
  /** The image its root is made of; `env` is the base of every exec's environment. */
  image: { reference: string; digest: string; env: Record<string, string> };
  /** What its (shared) root is made of. */
  root: RootPlan;
  readOnlyMounts: { hostPath: string; sandboxPath: string }[];
  /** Host paths (real paths) masked in this sandbox besides the provider's. */
  hiddenPaths: string[];
  /** `SandboxSpec.writableDirs`, each backed by `<rw>/dirs/<index>`; absent in older metadata. */
  writableDirs?: string[];
  /** The host directory of the workspace overlay's lower layer; absent in older metadata. */
  workspaceLower?: string;
  /** The limits in force, every default filled in. */
  limits: Required<SandboxLimits>;
  /** Frozen by `pause` until `resume`. */
  paused?: boolean;
}

const ID_PATTERN = /^sb-[0-9a-f]{16}$/;

/** Same key, same id: a retried create finds the sandbox the first attempt made. */
export function sandboxId(idempotencyKey: string): string {
  return `sb-${createHash('sha256').update(idempotencyKey).digest('hex').slice(0, 16)}`;
}

export function isSandboxId(id: string): boolean {
  return ID_PATTERN.test(id);
}

export function metaPath(dir: string): string {
  return join(dir, 'meta.json');
}

/** `undefined` when the sandbox is missing or half-made. */
export async function readMeta(dir: string): Promise<SandboxMeta | undefined> {
  let text: string;
  try {
    text = await readFile(metaPath(dir), 'utf8');
  } catch {
    return undefined;
  }
  try {
    return JSON.parse(text) as SandboxMeta;
  } catch {
    return undefined;
  }
}

/** A record written under a scratch name, not yet in place. */
export interface StagedMeta {
  /** Renames it into place: atomic, so a reader finds the whole record or none. */
  commit(): Promise<void>;
}

export async function stageMeta(dir: string, meta: SandboxMeta): Promise<StagedMeta> {
  const tmp = join(dir, `.meta.json.${randomBytes(4).toString('hex')}.tmp`);
  await writeFile(tmp, JSON.stringify(meta, null, 2));
  return { commit: () => rename(tmp, metaPath(dir)) };
}

export async function writeMeta(dir: string, meta: SandboxMeta): Promise<void> {
  await (await stageMeta(dir, meta)).commit();
}

export function infoOf(meta: SandboxMeta): SandboxInfo {
  return {
    id: meta.id,
    labels: { ...meta.labels },
    createdAt: meta.createdAt,
    expiresAt: meta.expiresAt,
  };
}
