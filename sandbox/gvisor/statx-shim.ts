/**
 * The statx shim (`statx-shim.c`): a tiny preload library without which coreutils' `ls` and
 * `stat` fail with EINVAL under this runsc (see the C file). Built once per source version with
 * the host's C compiler into the runner's state directory, and bound read-only into every run.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, mkdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ProviderUnavailableError } from '../provider.js';

const execFileAsync = promisify(execFile);

const SOURCE = fileURLToPath(new URL('./statx-shim.c', import.meta.url));

/** Where the shim is inside the sandbox: the Sentry's own /dev, so the image needs no mount point. */
export const STATX_SHIM_SANDBOX_PATH = '/dev/.agent-rollout-statx-shim.so';

/** The built shim in `dir` (built now if missing); `cc` is the C compiler. */
export async function buildStatxShim(dir: string, cc: string): Promise<string> {
  const source = await readFile(SOURCE);
  const key = createHash('sha256').update(source).digest('hex').slice(0, 12);
  const out = join(dir, `statx-shim-${key}.so`);
  if (await access(out).then(() => true, () => false)) return out;
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // Built under a private name and renamed: a concurrent build elsewhere never sees half a file.
  const partial = `${out}.${process.pid}.tmp`;
  try {
    await execFileAsync(cc, ['-shared', '-fPIC', '-O2', '-nostdlib', '-o', partial, SOURCE]);
    await rename(partial, out);
  } catch (err) {
    await rm(partial, { force: true });
    const stderr = (err as { stderr?: string }).stderr?.trim();
    throw new ProviderUnavailableError(
      `cannot build the gVisor statx shim with ${cc}: ${stderr || (err as Error).message}`,
      { cause: err },
    );
  }
  return out;
}
