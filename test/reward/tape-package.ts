/**
 * The tape package for tests of tape-style canaries: installed once from the npm registry into a
 * directory of the host's temp dir (tape is no dependency of this package), then copied into the
 * test repositories that `require('tape')`.
 */
import { execFileSync } from 'node:child_process';
import { cp, mkdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const TAPE_VERSION = '5.10.2';

/** The node_modules directory holding tape and its dependencies. */
export function tapeModules(): string {
  const prefix = join(tmpdir(), `agent-rollout-tape-${TAPE_VERSION}`);
  const modules = join(prefix, 'node_modules');
  if (!existsSync(join(modules, 'tape', 'package.json'))) {
    execFileSync(
      'npm',
      [
        'install',
        '--no-audit',
        '--no-fund',
        '--no-save',
        '--prefix',
        prefix,
        `tape@${TAPE_VERSION}`,
      ],
      { stdio: 'ignore' },
    );
  }
  return modules;
}

/** Copies tape and its dependencies into `repo`'s node_modules. */
export async function installTape(repo: string): Promise<void> {
  await mkdir(join(repo, 'node_modules'), { recursive: true });
  await cp(tapeModules(), join(repo, 'node_modules'), { recursive: true });
}
