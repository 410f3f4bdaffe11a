import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BubblewrapProvider } from '../../sandbox/bubblewrap.js';
import { workspaceDiff, WorkspaceDiffError } from '../../tasks/reward/index.js';
import { removeDirs, tempDir, writeTree } from '../sandbox/helpers.js';

const dirs: string[] = [];
let provider: BubblewrapProvider;
let workspace: string;
let n = 0;
const key = (): string => `wsdiff-${process.pid}-${n++}`;

/** Every file outside .git with its mode and hash: what "the same tree" means here. */
const TREE =
  "find . -path ./.git -prune -o -type f -printf '%m ' -exec sha256sum {} \\; | sort -k3";

beforeAll(async () => {
  const rootDir = await tempDir('wsdiff-root');
  workspace = await tempDir('wsdiff-ws');
  dirs.push(rootDir, workspace);
  await writeTree(workspace, {
    'keep.txt': 'unchanged\n',
    'edit.txt': 'line 1\nline 2\n',
    'gone.txt': 'delete me\n',
    'old-name.txt': 'moved content\n',
    'script.sh': 'echo hi\n',
    'ignored/.gitignore': '*.log\n',
  });
  provider = new BubblewrapProvider({ rootDir });
});

afterAll(async () => {
  await provider.release();
  await removeDirs(dirs);
});

describe('workspaceDiff', () => {
  it('captures edits, new, deleted, renamed, binary, mode changes and commits, and applies back', async () => {
    const agent = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
    const blob = randomBytes(4096);
    await provider.writeFile(agent.id, 'edit.txt', 'line 1\nline two\n');
    await provider.writeFile(agent.id, 'new/dir/new.txt', 'brand new\n');
    await provider.writeFile(agent.id, 'blob.bin', blob);
    const setup = await provider.exec(agent.id, {
      shell: [
        'rm gone.txt',
        'mv old-name.txt new-name.txt',
        'chmod +x script.sh',
        'echo noise > ignored/debug.log',
        // A commit by the agent must not hide its changes from the diff.
        'git -c user.name=a -c user.email=a@a commit -q -am "agent commit"',
        'echo after-commit >> keep.txt',
      ].join(' && '),
    });
    expect(setup.exitCode).toBe(0);
    const diff = await workspaceDiff(provider, agent.id);
    expect(diff).toContain('deleted file mode');
    expect(diff).toContain('GIT binary patch');
    expect(diff).toContain('new mode 100755');
    expect(diff).not.toContain('debug.log');
    const expected = (await provider.exec(agent.id, { shell: TREE })).stdout;

    const fresh = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
    const applied = await provider.exec(fresh.id, ['git', 'apply', '-'], { stdin: diff });
    expect(applied.stderr).toBe('');
    expect(applied.exitCode).toBe(0);
    const actual = (await provider.exec(fresh.id, { shell: TREE })).stdout;
    expect(actual.replace(/.*debug\.log\n/, '')).toBe(expected.replace(/.*debug\.log\n/, ''));
    expect(actual).toContain('755 ');
    await provider.destroy(agent.id);
    await provider.destroy(fresh.id);
  });

  it('is empty when nothing changed', async () => {
    const agent = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
    expect(await workspaceDiff(provider, agent.id)).toBe('');
    await provider.destroy(agent.id);
  });

  it('throws WorkspaceDiffError when the repository is gone', async () => {
    const agent = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
    await provider.exec(agent.id, ['rm', '-rf', '.git']);
    await expect(workspaceDiff(provider, agent.id)).rejects.toBeInstanceOf(WorkspaceDiffError);
    await provider.destroy(agent.id);
  });
});
