/**
 * File operations (single files and tar archives) done with exec inside the sandbox, so any
 * provider that can exec gets them.
 *
 * Paths are resolved inside the sandbox, where a symlink can only lead to what the sandbox itself
 * can see (its image's root and its own mounts); on top of that the resolved
 * path must stay under /workspace, so a symlink planted by the agent cannot redirect a read or a
 * write anywhere else.
 */
import { posix } from 'node:path';
import { InvalidSandboxSpecError, type SandboxProvider } from './provider.js';
import { WORKSPACE } from './mounts.js';

/** A file operation failed for a reason that is about the file, not the sandbox. */
export class SandboxFileError extends Error {
  override name = 'SandboxFileError';
  constructor(
    readonly path: string,
    reason: string,
  ) {
    super(`${path}: ${reason}`);
  }
}

/** Largest file `readFileViaExec` returns by default: 64 MiB. */
export const DEFAULT_MAX_READ_BYTES = 64 * 1024 * 1024;

const NOT_FOUND = 3;
const ESCAPES = 4;
const NOT_A_FILE = 5;

const READ_SCRIPT = `p=$(realpath -e -- "$1") || exit ${NOT_FOUND}
case "$p" in ${WORKSPACE}|${WORKSPACE}/*) ;; *) exit ${ESCAPES};; esac
[ -f "$p" ] || exit ${NOT_A_FILE}
exec base64 -w0 -- "$p"`;

const WRITE_SCRIPT = `p=$(realpath -m -- "$1") || exit ${NOT_FOUND}
case "$p" in ${WORKSPACE}/*) ;; *) exit ${ESCAPES};; esac
mkdir -p -- "$(dirname -- "$p")" && base64 -d > "$p"`;

/** `path` (absolute, or relative to /workspace) as a normalised absolute path under /workspace. */
export function workspacePath(path: string): string {
  const abs = posix.resolve(WORKSPACE, path);
  if (abs !== WORKSPACE && !abs.startsWith(`${WORKSPACE}/`)) {
    throw new InvalidSandboxSpecError(`path escapes ${WORKSPACE}: ${path}`);
  }
  return abs;
}

type Exec = Pick<SandboxProvider, 'exec'>;

export async function readFileViaExec(
  provider: Exec,
  id: string,
  path: string,
  maxBytes: number = DEFAULT_MAX_READ_BYTES,
): Promise<Buffer> {
  const abs = workspacePath(path);
  const r = await provider.exec(id, ['/bin/sh', '-c', READ_SCRIPT, 'read-file', abs], {
    maxOutputBytes: Math.ceil(maxBytes / 3) * 4,
  });
  if (r.exitCode === ESCAPES)
    throw new InvalidSandboxSpecError(`path resolves outside ${WORKSPACE}: ${path}`);
  if (r.exitCode === NOT_FOUND) throw new SandboxFileError(abs, 'no such file');
  if (r.exitCode === NOT_A_FILE) throw new SandboxFileError(abs, 'not a regular file');
  if (r.timedOut || r.exitCode !== 0)
    throw new SandboxFileError(abs, `read failed: ${r.stderr.trim()}`);
  if (r.truncated) throw new SandboxFileError(abs, `larger than ${maxBytes} bytes`);
  return Buffer.from(r.stdout, 'base64');
}

/** Creates missing parent directories; replaces the file if it exists. */
export async function writeFileViaExec(
  provider: Exec,
  id: string,
  path: string,
  data: Buffer | string,
): Promise<void> {
  const abs = workspacePath(path);
  const r = await provider.exec(id, ['/bin/sh', '-c', WRITE_SCRIPT, 'write-file', abs], {
    stdin: Buffer.from(data).toString('base64'),
  });
  if (r.exitCode === ESCAPES)
    throw new InvalidSandboxSpecError(`path resolves outside ${WORKSPACE}: ${path}`);
  if (r.timedOut || r.exitCode !== 0)
    throw new SandboxFileError(abs, `write failed: ${r.stderr.trim()}`);
}

/** Largest archive `downloadTarViaExec` returns by default: 256 MiB. */
export const DEFAULT_MAX_TAR_BYTES = 256 * 1024 * 1024;

/** Members keep the sandbox user as owner; `..` and absolute names are refused by tar itself. */
const UNTAR_SCRIPT = `mkdir -p -- "$1" && base64 -d | tar -x --no-same-owner --no-same-permissions -C "$1" -f -`;
const TAR_SCRIPT = `cd -- "$1" && tar -c -f - . | base64 -w0`;

/** Unpacks a tar archive into `dir` under /workspace (created when missing). */
export async function uploadTarViaExec(
  provider: Exec,
  id: string,
  tar: Buffer,
  dir: string = WORKSPACE,
): Promise<void> {
  const abs = workspacePath(dir);
  const r = await provider.exec(id, ['/bin/sh', '-c', UNTAR_SCRIPT, 'upload', abs], {
    stdin: tar.toString('base64'),
    timeoutMs: 10 * 60_000,
  });
  if (r.timedOut || r.exitCode !== 0)
    throw new SandboxFileError(abs, `upload failed: ${r.stderr.trim()}`);
}

/** A tar archive of `dir` under /workspace. */
export async function downloadTarViaExec(
  provider: Exec,
  id: string,
  dir: string = WORKSPACE,
  maxBytes: number = DEFAULT_MAX_TAR_BYTES,
): Promise<Buffer> {
  const abs = workspacePath(dir);
  const r = await provider.exec(id, ['/bin/sh', '-c', TAR_SCRIPT, 'download', abs], {
    maxOutputBytes: Math.ceil(maxBytes / 3) * 4,
    timeoutMs: 10 * 60_000,
  });
  if (r.truncated) throw new SandboxFileError(abs, `archive larger than ${maxBytes} bytes`);
  if (r.timedOut || r.exitCode !== 0)
    throw new SandboxFileError(abs, `download failed: ${r.stderr.trim()}`);
  return Buffer.from(r.stdout, 'base64');
}
