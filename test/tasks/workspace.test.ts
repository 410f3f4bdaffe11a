/**
 * The agent's repository is a fresh single-commit repository at the base commit, whatever the
 * workspace source: a directory that is itself a git repository with history (and a nested
 * repository), a git bundle of that history, or tarballs of it, .git included. Checked inside real
 * bubblewrap sandboxes: one commit, one branch, no tags, reflogs, remotes or stashes, no object
 * beyond the commit's own, and not the blob of the fixed file.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BubblewrapProvider } from '../../sandbox/bubblewrap.js';
import { TaskSchema, type Task } from '../../tasks/schema.js';
import { WorkspaceError, workspaceDirOf } from '../../tasks/workspace.js';
import { git, removeDirs, tempDir, writeTree } from '../sandbox/helpers.js';

const BASE = 'def add(a, b):\n    return a - b\n';
const FIXED = 'def add(a, b):\n    return a + b\n';

const dirs: string[] = [];
let provider: BubblewrapProvider;
let cacheDir: string;
let src: string;
let baseCommit: string;
let fixedBlob: string;
let nestedFixBlob: string;
let sandboxes = 0;

function task(workspace: Record<string, unknown>, base = baseCommit): Task {
  return TaskSchema.parse({
    instance_id: 'ws-1',
    repo: 'fixture/calc',
    base_commit: base,
    problem_statement: 'add() subtracts',
    patch: 'unused',
    test_patch: 'unused',
    FAIL_TO_PASS: ['t'],
    workspace,
    test_framework: 'unittest',
  });
}

beforeAll(async () => {
  const root = await tempDir('ws-root');
  cacheDir = await tempDir('ws-cache');
  dirs.push(root, cacheDir);
  provider = new BubblewrapProvider({ rootDir: root });

  // A repository whose history holds the fix: base commit, then the fix on main, a branch, a
  // tag, a remote, a stash; and a nested repository with a fix of its own.
  src = await tempDir('ws-src');
  dirs.push(src);
  await writeTree(src, { 'calc.py': BASE, 'README.md': 'calc\n' });
  git(src, 'init', '-q', '-b', 'main');
  git(src, 'add', '-A');
  git(src, 'commit', '-qm', 'base');
  baseCommit = git(src, 'rev-parse', 'HEAD').trim();
  await writeTree(src, { 'calc.py': FIXED });
  git(src, 'commit', '-qam', 'fix add');
  git(src, 'tag', '-a', 'v1', '-m', 'fixed');
  git(src, 'branch', 'fix-branch');
  git(src, 'remote', 'add', 'origin', 'https://example.invalid/calc.git');
  fixedBlob = git(src, 'rev-parse', 'HEAD:calc.py').trim();
  git(src, 'checkout', '-q', baseCommit);
  await writeTree(src, { 'README.md': 'stashed work\n' });
  git(src, 'stash', '-q');
  const nested = `${src}/vendor/lib`;
  await writeTree(nested, { 'lib.py': 'X = 1\n' });
  git(nested, 'init', '-q');
  git(nested, 'add', '-A');
  git(nested, 'commit', '-qm', 'lib');
  await writeTree(nested, { 'lib.py': 'X = 2  # the nested fix\n' });
  nestedFixBlob = git(nested, 'hash-object', '-w', 'lib.py').trim();
  git(nested, 'commit', '-qam', 'lib fix');
  git(nested, 'checkout', '-q', 'HEAD~1');
});

afterAll(async () => {
  await provider.release();
  await removeDirs(dirs);
});

/** Facts about the repository the agent gets, read inside its sandbox. */
async function agentRepo(workspaceDir: string): Promise<Record<string, string>> {
  const { id } = await provider.create({
    idempotencyKey: `ws-${process.pid}-${sandboxes++}`,
    workspaceDir,
  });
  try {
    const facts: Record<string, string> = {};
    const probes: Record<string, string> = {
      commits: 'git rev-list --all --reflog --count',
      refs: 'git for-each-ref --format="%(refname)"',
      remotes: 'git remote',
      reflogs: 'ls .git/logs 2>/dev/null | wc -l',
      stash: 'git stash list',
      packs: 'ls .git/objects/pack | wc -l',
      objects: 'git cat-file --batch-all-objects --batch-check | wc -l',
      reachable: 'git rev-list --objects --all | wc -l',
      fixedBlob: `git cat-file -e ${fixedBlob} 2>/dev/null && echo present || echo absent`,
      nestedFixBlob: `git cat-file -e ${nestedFixBlob} 2>/dev/null && echo present || echo absent`,
      nestedGit: 'find . -mindepth 2 -name .git | wc -l',
      calc: 'cat calc.py',
      status: 'git status --porcelain',
    };
    for (const [name, cmd] of Object.entries(probes)) {
      const r = await provider.exec(id, { shell: cmd });
      expect([name, r.exitCode, r.stderr]).toEqual([name, 0, '']);
      facts[name] = r.stdout.trim();
    }
    return facts;
  } finally {
    await provider.destroy(id);
  }
}

function expectFresh(facts: Record<string, string>): void {
  expect(facts).toMatchObject({
    commits: '1',
    refs: 'refs/heads/main',
    remotes: '',
    reflogs: '0',
    stash: '',
    packs: '0',
    fixedBlob: 'absent',
    nestedFixBlob: 'absent',
    nestedGit: '0',
    calc: BASE.trim(),
    status: '',
  });
  expect(facts.objects).toBe(facts.reachable);
}

describe('the agent repository is a fresh single-commit repository at the base commit', () => {
  it('from a directory that is a repository with history and a nested repository', async () => {
    const dir = await workspaceDirOf(task({ kind: 'dir', path: src }), cacheDir);
    // A nested .git makes the loader copy the directory without it.
    expect(dir.startsWith(cacheDir)).toBe(true);
    expectFresh(await agentRepo(dir));
  });

  it('from a git bundle of every ref, checked out at base_commit', async () => {
    const bundle = `${src}.bundle`;
    dirs.push(bundle);
    git(src, 'bundle', 'create', '-q', bundle, '--all');
    const dir = await workspaceDirOf(task({ kind: 'git-bundle', path: bundle }), cacheDir);
    expectFresh(await agentRepo(dir));
  });

  it.each([
    ['repo.tar.gz', ['-czf']],
    ['repo.tar', ['-cf']],
  ])('from a tarball (%s) holding .git directories, with strip_components', async (name, flags) => {
    const archive = `${src}-${name}`;
    dirs.push(archive);
    execFileSync('tar', [...flags, archive, '-C', `${src}/..`, src.split('/').pop()!]);
    const dir = await workspaceDirOf(
      task({ kind: 'tarball', path: archive, strip_components: 1 }),
      cacheDir,
    );
    expectFresh(await agentRepo(dir));
  });

  it('unpacks a source once and reuses it', async () => {
    const bundle = `${src}.bundle`;
    const t = task({ kind: 'git-bundle', path: bundle });
    const [a, b] = await Promise.all([workspaceDirOf(t, cacheDir), workspaceDirOf(t, cacheDir)]);
    expect(a).toBe(b);
    expect(await workspaceDirOf(t, cacheDir)).toBe(a);
  });

  it('names a commit the bundle does not hold and a missing tarball', async () => {
    const missing = task({ kind: 'git-bundle', path: `${src}.bundle` }, 'f'.repeat(40));
    await expect(workspaceDirOf(missing, cacheDir)).rejects.toThrow(WorkspaceError);
    await expect(workspaceDirOf(missing, cacheDir)).rejects.toThrow(/git checkout f{40} failed/);
    const gone = task({ kind: 'tarball', path: `${src}-gone.tar` });
    await expect(workspaceDirOf(gone, cacheDir)).rejects.toThrow(/does not exist/);
  });
});
