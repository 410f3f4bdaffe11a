import { utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { workspaceKeyOf } from '../../tasks/workspace-key.js';
import { WorkspaceError } from '../../tasks/workspace.js';
import { removeDirs, tempDir, writeTree } from '../sandbox/helpers.js';

const dirs: string[] = [];

afterAll(async () => {
  await removeDirs(dirs);
});

describe('workspaceKeyOf', () => {
  it('keys a directory on its path and its whole tree', async () => {
    const cacheDir = await tempDir('key-cache');
    const a = await tempDir('key-a');
    const b = await tempDir('key-b');
    dirs.push(cacheDir, a, b);
    const files = { 'src/deep/mod.py': 'x = 1\n', 'README.md': 'hi\n' };
    await writeTree(a, files);
    await writeTree(b, files);
    const first = await workspaceKeyOf(a, cacheDir);
    expect(await workspaceKeyOf(a, cacheDir)).toBe(first);
    // The same files elsewhere are another workspace.
    expect(await workspaceKeyOf(b, cacheDir)).not.toBe(first);
    // An edit deep below the top level, even one that keeps the size, makes another key.
    const mod = join(a, 'src/deep/mod.py');
    await writeFile(mod, 'x = 2\n');
    await utimes(mod, new Date(2001, 0, 1), new Date(2001, 0, 1));
    const edited = await workspaceKeyOf(a, cacheDir);
    expect(edited).not.toBe(first);
    await writeFile(join(a, 'src/new.py'), '');
    expect(await workspaceKeyOf(a, cacheDir)).not.toBe(edited);
  });

  it('keys an unpacked copy in the cache by its path, which names its source', async () => {
    const cacheDir = await tempDir('key-cache');
    dirs.push(cacheDir);
    const copy = join(cacheDir, 'tarball-0123456789abcdef01234567');
    expect(await workspaceKeyOf(copy, cacheDir)).toBe(`cache:${copy}`);
  });

  it('fails with WorkspaceError on a directory that does not exist', async () => {
    await expect(workspaceKeyOf('/no/such/workspace')).rejects.toBeInstanceOf(WorkspaceError);
  });
});
