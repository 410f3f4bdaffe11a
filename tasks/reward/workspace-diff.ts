/** The agent's changes as one git diff, read from inside its sandbox. */
import type { SandboxProvider } from '../../sandbox/provider.js';

/** The workspace is no longer a git repository with a base commit, or the diff is too large. */
export class WorkspaceDiffError extends Error {
  override name = 'WorkspaceDiffError';
}

/** Largest diff returned: 64 MiB. */
export const MAX_DIFF_BYTES = 64 * 1024 * 1024;

/**
 * Diffs against the root commit (the base snapshot) rather than HEAD, so changes the agent
 * committed count too. Flags pin the format against whatever the agent put in .git/config: plain
 * `a/` `b/` prefixes, no renames (a rename becomes delete + add, so every section names the path
 * it touches), no colour, external diff drivers or textconv.
 */
const DIFF_SCRIPT = `set -e
git add -A
base=$(git rev-list --max-parents=0 HEAD | tail -n 1)
exec git diff --cached --binary --no-color --no-ext-diff --no-textconv --no-renames --no-relative \\
  --src-prefix=a/ --dst-prefix=b/ "$base" --`;

/**
 * `git add -A` then `git diff --cached --binary <base>` inside the sandbox: modified, new and
 * deleted files (ignored files excluded), in a form `git apply` takes back. Text that is not
 * UTF-8 does not survive the trip through exec's string output.
 */
export async function workspaceDiff(provider: SandboxProvider, sandboxId: string): Promise<string> {
  const r = await provider.exec(sandboxId, ['/bin/sh', '-c', DIFF_SCRIPT], {
    env: { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
    timeoutMs: 120_000,
    maxOutputBytes: MAX_DIFF_BYTES,
  });
  if (r.timedOut) throw new WorkspaceDiffError('git diff timed out');
  if (r.exitCode !== 0)
    throw new WorkspaceDiffError(`git diff failed (${r.exitCode}): ${r.stderr.trim()}`);
  if (r.truncated) throw new WorkspaceDiffError(`diff larger than ${MAX_DIFF_BYTES} bytes`);
  return r.stdout;
}
