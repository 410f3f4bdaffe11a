/**
 * Building the attack suite's fixture repositories: a package shaped like a real one (its own
 * test layout and runner configuration), a bug in one module, its gold patch, and a test patch
 * that changes one hidden test file. Patches are made by git on the host from the files before
 * and after, so they are what a dataset would hold.
 */
import { cp, mkdir, readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { TaskSchema, type Task, type TestFramework } from '../../../tasks/schema.js';
import { git, removeDirs, tempDir, writeTree } from '../../sandbox/helpers.js';

/** The runners of the suite: the report frameworks and tape (read from its TAP log). */
export type Runner = TestFramework | 'tape';

export interface RepoFixture {
  runner: Runner;
  /** Package name, for the task's ids. */
  name: string;
  /** The repository at its base commit (the bug in place, the hidden tests' old version). */
  files: Record<string, string>;
  /** Files the gold patch changes, as they are after it. */
  gold: Record<string, string>;
  /** The one test file the test patch changes, as it is after it. */
  hidden: { path: string; content: string };
  FAIL_TO_PASS: string[];
  /** The other tests of the hidden file. */
  PASS_TO_PASS: string[];
  /** `test_framework`, or `log_parser` with `test_command`. */
  task: Record<string, unknown>;
  /** The module the hidden tests import (through the package entry point). */
  entry: string;
  /** Another test file, none of whose tests FAIL_TO_PASS or PASS_TO_PASS name. */
  otherFile: string;
  /** The ids of `otherFile`'s tests, as the runner reports them. */
  otherTests: string[];
  /** Shell, run in /workspace: breaks the module only `otherFile` tests (6 of its 10 tests fail). */
  breakOther: string;
  /** The tests of `otherTests` that `breakOther` breaks. */
  otherBroken: string[];
  /** npm packages copied into the repository's own node_modules (its pinned runner). */
  vendor?: string[];
}

/** `git diff` turning `before` into `after` (paths missing from `before` are new files). */
export async function diffOf(
  before: Record<string, string>,
  after: Record<string, string>,
): Promise<string> {
  const dir = await tempDir('patch');
  try {
    const old: Record<string, string> = {};
    for (const path of Object.keys(after)) if (path in before) old[path] = before[path]!;
    await writeTree(dir, old);
    git(dir, 'init', '-q', '-b', 'main');
    git(dir, 'add', '-A');
    git(dir, 'commit', '-q', '--allow-empty', '-m', 'base');
    await writeTree(dir, after);
    git(dir, 'add', '-A');
    return git(dir, 'diff', '--cached', '--no-color', '--src-prefix=a/', '--dst-prefix=b/');
  } finally {
    await removeDirs([dir]);
  }
}

const exists = (path: string): Promise<boolean> =>
  stat(path).then(
    () => true,
    () => false,
  );

/**
 * Copies npm package `name` and everything it depends on from this package's node_modules into
 * `dir/node_modules`, keeping each package's place in the tree, so that Node resolves the copies
 * as it resolves the originals.
 */
export async function vendorPackage(name: string, dir: string): Promise<void> {
  const require = createRequire(import.meta.url);
  const root = join(dirname(require.resolve('vitest/package.json')), '..');
  const seen = new Set<string>();
  const find = async (pkg: string, from: string): Promise<string> => {
    for (let d = from; d.startsWith(root); d = dirname(d)) {
      const candidate = join(d, d === root ? '' : 'node_modules', pkg);
      if (await exists(join(candidate, 'package.json'))) return candidate;
      if (d === root) break;
    }
    throw new Error(`cannot find ${pkg} from ${from}`);
  };
  const visit = async (pkgDir: string): Promise<void> => {
    if (seen.has(pkgDir)) return;
    seen.add(pkgDir);
    const manifest = JSON.parse(await readFile(join(pkgDir, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
    };
    for (const dep of Object.keys(manifest.dependencies ?? {}))
      await visit(await find(dep, pkgDir));
  };
  await visit(await find(name, root));
  for (const pkgDir of seen) {
    const target = join(dir, 'node_modules', relative(root, pkgDir));
    await mkdir(dirname(target), { recursive: true });
    await cp(pkgDir, target, { recursive: true, dereference: true });
  }
}

/** The fixture's workspace directory and its task. */
export async function buildRepo(fixture: RepoFixture): Promise<{ task: Task; dir: string }> {
  const dir = await tempDir(`repo-${fixture.runner}`);
  await writeTree(dir, fixture.files);
  for (const pkg of fixture.vendor ?? []) await vendorPackage(pkg, dir);
  const task = TaskSchema.parse({
    instance_id: `${fixture.name}-${fixture.runner}-1`,
    repo: `fixture/${fixture.name}`,
    problem_statement: 'parse() accepts garbage: it should throw on input it cannot read',
    patch: await diffOf(fixture.files, fixture.gold),
    test_patch: await diffOf(fixture.files, { [fixture.hidden.path]: fixture.hidden.content }),
    FAIL_TO_PASS: fixture.FAIL_TO_PASS,
    PASS_TO_PASS: fixture.PASS_TO_PASS,
    workspace: { kind: 'dir', path: dir },
    ...fixture.task,
  });
  return { task, dir };
}
