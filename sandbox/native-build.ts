/**
 * Builds a small C helper of this project (the gVisor statx shim, the sandbox launcher) with the
 * host's C compiler on first use, once per source version: the output is named after a hash of
 * the source and the flags, so an edited source is built afresh and an unchanged one never again.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, mkdir, readFile, rename, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { ProviderUnavailableError } from './provider.js';

const execFileAsync = promisify(execFile);

export interface NativeBuild {
  /** The C source file. */
  source: string;
  /** Where the output goes (made 0700 when missing). */
  dir: string;
  /** The C compiler. */
  cc: string;
  /** Compiler flags before `-o`. */
  flags: string[];
  /** The output's name ends with this (`.so`, or empty for a program). */
  suffix: string;
  /** What is built, for the error message. */
  what: string;
}

/** The built output in `dir` (built now if missing). */
export async function buildNative(build: NativeBuild): Promise<string> {
  const source = await readFile(build.source);
  const key = createHash('sha256')
    .update(JSON.stringify(build.flags))
    .update(source)
    .digest('hex')
    .slice(0, 12);
  const out = join(build.dir, `${basename(build.source, '.c')}-${key}${build.suffix}`);
  if (await access(out).then(() => true, () => false)) return out;
  await mkdir(build.dir, { recursive: true, mode: 0o700 });
  // Built under a private name and renamed: a concurrent build elsewhere never sees half a file.
  const partial = `${out}.${process.pid}.tmp`;
  try {
    await execFileAsync(build.cc, [...build.flags, '-o', partial, build.source]);
    await rename(partial, out);
  } catch (err) {
    await rm(partial, { force: true });
    const stderr = (err as { stderr?: string }).stderr?.trim();
    throw new ProviderUnavailableError(
      `cannot build the ${build.what} with ${build.cc}: ${stderr || (err as Error).message}`,
      { cause: err },
    );
  }
  return out;
}
