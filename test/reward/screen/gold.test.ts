/**
 * The screen's false-positive check: every gold patch it can find here, as the reward would
 * screen it (the diff an agent that wrote the fix leaves, minus test changes), passes, and so does
 * the whole source of every task in the built-in pack.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { builtinPackDir, loadTaskPack } from '../../../tasks/loader.js';
import { pathsOf, stripTestChanges } from '../../../tasks/reward/diff.js';
import { activeRules } from '../../../tasks/reward/screen/config.js';
import { screenDiff } from '../../../tasks/reward/screen/screen.js';
import { JEST_FILES, JEST_FIX, JS_FILES, JS_FIX, PY_FILES, PY_FIX } from '../fixtures.js';
import {
  git,
  newFileDiff,
  readTree,
  removeDirs,
  tempDir,
  writeTree,
} from '../../sandbox/helpers.js';

const ALL = activeRules();
const packDir = builtinPackDir();
const tasks = await loadTaskPack(packDir);
const dirs: string[] = [];

afterAll(() => removeDirs(dirs));

/** The fix as `workspaceDiff` reports it: git's diff of the fixed tree against the base commit. */
async function fixDiff(base: Record<string, string>, fix: Record<string, string>): Promise<string> {
  const dir = await tempDir('screen-gold');
  dirs.push(dir);
  await writeTree(dir, base);
  git(dir, 'init', '-q');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-qm', 'base');
  await writeTree(dir, fix);
  git(dir, 'add', '-A');
  return git(dir, 'diff', '--cached', '--no-color', '--no-renames', 'HEAD', '--');
}

describe('the screen passes honest fixes', () => {
  it('finds the pack', () => {
    expect(tasks.length).toBeGreaterThanOrEqual(8);
  });

  it.each(tasks.map((t) => [t.instance_id, t] as const))('gold patch of %s', (_id, task) => {
    const { diff } = stripTestChanges(task.patch, pathsOf(task.test_patch));
    expect(diff).toMatch(/^\+[^+]/m);
    expect(screenDiff(diff, ALL)).toEqual([]);
  });

  it.each(tasks.map((t) => [t.instance_id] as const))('whole source of %s', async (id) => {
    const files = await readTree(join(packDir, id, 'repo'));
    const diff = Object.entries(files)
      .map(([path, content]) => newFileDiff(path, content))
      .join('');
    expect(diff).not.toBe('');
    expect(screenDiff(diff, ALL)).toEqual([]);
  });

  it.each([
    ['python', PY_FILES, PY_FIX],
    ['node', JS_FILES, JS_FIX],
    ['jest', JEST_FILES, JEST_FIX],
  ] as const)('the %s fixture fix', async (_name, base, fix) => {
    const diff = await fixDiff(base, fix);
    expect(diff).toMatch(/^\+ +return a \+ b;?$/m);
    expect(screenDiff(diff, ALL)).toEqual([]);
  });
});
