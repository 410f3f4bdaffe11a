/**
 * The sandbox launcher (`launcher.c`): the first process of every sandboxed command. It joins the
 * sandbox's cgroups and, for a runner that needs it, drops to the sandbox user, then execs the
 * runner (bwrap, runsc); one small exec in place of a shell and `setpriv`. Built once per source
 * version with the host's C compiler (`native-build.ts`).
 */
import { fileURLToPath } from 'node:url';
import { buildNative } from './native-build.js';
import type { SandboxUser } from './runner.js';

const SOURCE = fileURLToPath(new URL('./launcher.c', import.meta.url));

/** Where the launcher is built unless the provider says otherwise; root only. */
export const DEFAULT_LAUNCHER_DIR = '/run/agent-rollout-launcher';

/** The built launcher in `dir` (built now if missing); `cc` is the C compiler. */
export function buildLauncher(dir: string, cc: string): Promise<string> {
  const what = 'sandbox launcher';
  return buildNative({ source: SOURCE, dir, cc, flags: ['-O2'], suffix: '', what });
}

export interface Launch {
  /** cgroup files (`tasks` or `cgroup.procs`) to join, in order. */
  join: string[];
  /** The host user to become after joining; none keeps root (runsc drops privileges itself). */
  user?: SandboxUser;
}

/** The argv prefix that runs `launcher` for `launch` and then execs whatever follows it. */
export function launcherArgv(launcher: string, launch: Launch): string[] {
  const user = launch.user ? ['-u', String(launch.user.uid), '-g', String(launch.user.gid)] : [];
  return [launcher, ...launch.join.flatMap((file) => ['-j', file]), ...user, '--'];
}
