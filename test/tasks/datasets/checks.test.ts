import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkTasks, formatFailure } from '../../../tasks/datasets/checks.js';
import { loadTaskReport } from '../../../tasks/loader.js';
import { runCli } from '../../helpers/processes.js';

let root = '';
let cacheDir = '';
let base = '';

const GOLD = 'diff --git a/src/m.py b/src/m.py\n--- a/src/m.py\n+++ b/src/m.py\n@@ -1 +1 @@\n-bug\n+fix\n';
const TESTS = 'diff --git a/tests/test_m.py b/tests/test_m.py\n--- a/tests/test_m.py\n+++ b/tests/test_m.py\n@@ -1 +1,2 @@\n x\n+y\n';

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd, encoding: 'utf8' }).trim();
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'task-checks-'));
  cacheDir = join(root, 'cache');
  // One small repository, published three ways: a bundle, and a tarball with one leading folder.
  const repo = join(root, 'proj-1');
  await mkdir(join(repo, 'src'), { recursive: true });
  await mkdir(join(repo, 'tests'), { recursive: true });
  await writeFile(join(repo, 'src', 'm.py'), 'bug\n');
  await writeFile(join(repo, 'tests', 'test_m.py'), 'x\n');
  git(repo, 'init', '-q');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-qm', 'base');
  base = git(repo, 'rev-parse', 'HEAD');
  git(repo, 'bundle', 'create', '-q', join(root, 'proj.bundle'), '--all');
  execFileSync('tar', ['-czf', join(root, 'proj.tar.gz'), '--exclude=.git', '-C', root, 'proj-1']);
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

function task(id: string, overrides: Record<string, unknown>): Record<string, unknown> {
  return {
    instance_id: id,
    repo: 'example/proj',
    base_commit: base,
    problem_statement: 'm.py says bug',
    patch: GOLD,
    test_patch: TESTS,
    FAIL_TO_PASS: ['tests/test_m.py::test_fix'],
    test_command: 'pytest -rA tests/test_m.py',
    log_parser: 'pytest',
    ...overrides,
  };
}

async function check(name: string, rows: Record<string, unknown>[]): Promise<string[]> {
  const file = join(root, name);
  await writeFile(file, rows.map((r) => JSON.stringify(r)).join('\n'));
  const report = await loadTaskReport(file);
  return (await checkTasks(report.tasks, { cacheDir, concurrency: 2 })).map(formatFailure);
}

describe('load-time checks', () => {
  it('pass a bundle holding its base commit and a tarball with the right strip_components', async () => {
    const failures = await check('good.jsonl', [
      task('bundle-ok', { workspace: { kind: 'git-bundle', path: 'proj.bundle' } }),
      task('tar-ok', { workspace: { kind: 'tarball', path: 'proj.tar.gz', strip_components: 1 } }),
    ]);
    expect(failures).toEqual([]);
  });

  it('name the row and base_commit of a bundle without that commit', async () => {
    const missing = 'a'.repeat(40);
    const failures = await check('no-commit.jsonl', [
      task('bundle-ok', { workspace: { kind: 'git-bundle', path: 'proj.bundle' } }),
      task('bundle-bad', { base_commit: missing, workspace: { kind: 'git-bundle', path: 'proj.bundle' } }),
    ]);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toContain(`${join(root, 'no-commit.jsonl')}:2: task bundle-bad: base_commit: ${missing} is not in the bundle`);
  });

  it('catch a wrong strip_components through the patches that no longer apply', async () => {
    const failures = await check('strip.jsonl', [
      task('tar-strip0', { workspace: { kind: 'tarball', path: 'proj.tar.gz', strip_components: 0 } }),
      task('tar-strip5', { workspace: { kind: 'tarball', path: 'proj.tar.gz', strip_components: 5 } }),
    ]);
    expect(failures[0]).toMatch(/strip\.jsonl:1: task tar-strip0: patch: the gold patch does not apply to the workspace \(is workspace\.strip_components right\?\): .*src\/m\.py/);
    expect(failures[1]).toMatch(/strip\.jsonl:1: task tar-strip0: test_patch: the test patch does not apply/);
    expect(failures[2]).toContain('strip.jsonl:2: task tar-strip5: workspace.strip_components: ');
    expect(failures[2]).toContain('unpacks to nothing');
    expect(failures).toHaveLength(3);
  });

  it('name a test id its log parser could never report', async () => {
    const failures = await check('ids.jsonl', [
      task('ids', {
        workspace: { kind: 'tarball', path: 'proj.tar.gz', strip_components: 1 },
        FAIL_TO_PASS: ['tests/test_m.py::test_fix', 'test_fix'],
        PASS_TO_PASS: ['tests/test_m.py::test_ok[a b]'],
      }),
      task('go-ids', {
        workspace: { kind: 'tarball', path: 'proj.tar.gz', strip_components: 1 },
        log_parser: 'go-test',
        FAIL_TO_PASS: ['TestParse/empty', 'parse empty'],
      }),
    ]);
    expect(failures).toEqual([
      expect.stringMatching(/ids\.jsonl:1: task ids: FAIL_TO_PASS\[1\]: "test_fix" is not a pytest test id/),
      expect.stringMatching(/ids\.jsonl:2: task go-ids: FAIL_TO_PASS\[1\]: "parse empty" is not a go-test test id/),
    ]);
  });
});

describe('load-time checks over many rows', () => {
  it('unpack a workspace shared by many rows once', async () => {
    const rows = Array.from({ length: 300 }, (_, i) =>
      task(`shared-${i}`, { workspace: { kind: 'git-bundle', path: 'proj.bundle' } }),
    );
    const file = join(root, 'shared.jsonl');
    await writeFile(file, rows.map((r) => JSON.stringify(r)).join('\n'));
    const report = await loadTaskReport(file);
    const ownCache = join(root, 'shared-cache');
    expect(await checkTasks(report.tasks, { cacheDir: ownCache })).toEqual([]);
    expect(await readdir(ownCache)).toHaveLength(1);
  });
});

describe('rollout tasks check', () => {
  it('prints the format, tasks, warnings and failures, and exits 1 on a failure', async () => {
    const file = join(root, 'cli.jsonl');
    await writeFile(
      file,
      [
        task('cli-ok', { workspace: { kind: 'git-bundle', path: 'proj.bundle' } }),
        task('cli-bad', { base_commit: 'b'.repeat(40), workspace: { kind: 'git-bundle', path: 'proj.bundle' } }),
      ]
        .map((r) => JSON.stringify(r))
        .join('\n'),
    );
    const bad = await runCli(['tasks', 'check', file]);
    expect(bad.stdout).toContain('format:   agent-rollout (detected)');
    expect(bad.stdout).toContain('tasks:    2 loaded');
    expect(bad.stdout).toContain('failures: 1');
    expect(bad.stdout).toContain('task cli-bad: base_commit:');
    expect(bad.code).toBe(1);

    const good = await runCli(['tasks', 'check', '--format', 'agent-rollout', 'tasks/pack']);
    expect(good.stdout).toContain('format:   agent-rollout (given)');
    expect(good.stdout).toContain('tasks:    8 loaded');
    expect(good.stdout).toContain('failures: 0');
    expect(good.code).toBe(0);
  });
});
