import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { secretPathsOf } from '../../tasks/secret-paths.js';
import type { Task } from '../../tasks/schema.js';

const task = (workspace: Task['workspace'], reward: Task['reward'] = { kind: 'tests' }): Task =>
  ({ workspace, reward }) as Task;

describe('secretPathsOf', () => {
  const folder = mkdtempSync(join(os.tmpdir(), 'secret-paths-'));
  const file = join(folder, 'tasks.jsonl');
  writeFileSync(file, '');

  it("hides a task file's whole folder, where sibling tasks and bundles lie", () => {
    expect(secretPathsOf(file, task({ kind: 'dir', path: join(folder, 'repo') }))).toEqual([folder]);
  });

  it('hides a pack directory itself, and a bundle or tarball source wherever it is', () => {
    expect(secretPathsOf(folder, task({ kind: 'git-bundle', path: '/data/repo.bundle' }))).toEqual(['/data/repo.bundle', folder]);
  });

  it("hides a script reward's verifier folder; an image workspace is no host path", () => {
    const reward = { kind: 'script', dir: '/data/verifier', command: 'bash /tests/test.sh', reward_file: '/logs/verifier/reward.txt' } as const;
    expect(secretPathsOf(file, task({ kind: 'image', path: '/testbed' }, reward))).toEqual(['/data/verifier', folder]);
  });

  it('hides only the file when its folder is the root', () => {
    expect(secretPathsOf('/tasks.jsonl', task({ kind: 'dir', path: '/repo' }))).toEqual(['/tasks.jsonl']);
  });
});
