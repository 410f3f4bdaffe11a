/**
 * The statx shim (`statx-shim.c`): a tiny preload library without which coreutils' `ls` and
 * `stat` fail with EINVAL under this runsc (see the C file). Built once per source version with
 * the host's C compiler into the runner's state directory, and bound read-only into every run.
 */
import { fileURLToPath } from 'node:url';
import { buildNative } from '../native-build.js';

const SOURCE = fileURLToPath(new URL('./statx-shim.c', import.meta.url));

/** Where the shim is inside the sandbox: the Sentry's own /dev, so the image needs no mount point. */
export const STATX_SHIM_SANDBOX_PATH = '/dev/.agent-rollout-statx-shim.so';

/** The built shim in `dir` (built now if missing); `cc` is the C compiler. */
export function buildStatxShim(dir: string, cc: string): Promise<string> {
  return buildNative({
    source: SOURCE,
    dir,
    cc,
    flags: ['-shared', '-fPIC', '-O2', '-nostdlib'],
    suffix: '.so',
    what: 'gVisor statx shim',
  });
}
