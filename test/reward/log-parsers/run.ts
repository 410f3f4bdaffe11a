/** Runs a real test runner over fixture files and returns what it printed, stdout and stderr as one. */
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';

/** The combined console output of `command` run by `sh` in `cwd`; its exit status is not looked at. */
export function consoleOf(cwd: string, command: string, env: Record<string, string> = {}): string {
  const r = spawnSync('/bin/sh', ['-c', `${command} 2>&1`], {
    cwd,
    env: { ...process.env, CI: '1', ...env },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.error) throw r.error;
  return r.stdout;
}

/** This package's installed runner entry points (jest, mocha, vitest). */
export function runnerBin(pkg: 'jest' | 'mocha' | 'vitest'): string {
  const root = dirname(createRequire(import.meta.url).resolve(`${pkg}/package.json`));
  const bins: Record<typeof pkg, string> = {
    jest: 'bin/jest.js',
    mocha: 'bin/mocha.js',
    vitest: 'vitest.mjs',
  };
  return `${root}/${bins[pkg]}`;
}
