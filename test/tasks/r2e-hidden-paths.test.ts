/**
 * An R2E-Gym-style task from its published row: an OCI image (the base image plus a layer) with
 * the repository at /testbed, its tests at /r2e_tests and run_tests.sh in the repository. The
 * agent's sandbox must not see the tests or the script; the reward's runs them, and a diff that
 * writes into the hidden paths is dropped.
 */
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BubblewrapProvider } from '../../sandbox/bubblewrap.js';
import { LocalImageStore } from '../../sandbox/images/index.js';
import { InvalidSandboxSpecError } from '../../sandbox/provider.js';
import { loadTasks } from '../../tasks/loader.js';
import { evaluateReward } from '../../tasks/reward/index.js';
import { TaskSchema, type Task } from '../../tasks/schema.js';
import { taskSandboxSpec, type SandboxView } from '../../tasks/task-sandbox.js';
import { buildImage } from '../helpers/oci-image.js';
import { newFileDiff } from '../sandbox/helpers.js';

const SOURCE = 'def clamp(x, lo, hi):\n    return max(lo, x)\n';

const TESTS = `from mathx import clamp


def test_low():
    assert clamp(-1, 0, 5) == 0


class TestClamp:
    def test_high(self):
        assert clamp(9, 0, 5) == 5

    def test_broken(self):
        assert False
`;

const GOLD = `diff --git a/mathx/__init__.py b/mathx/__init__.py
--- a/mathx/__init__.py
+++ b/mathx/__init__.py
@@ -1,2 +1,2 @@
 def clamp(x, lo, hi):
-    return max(lo, x)
+    return min(hi, max(lo, x))
`;

let dir = '';
let task: Task;
let images: LocalImageStore;
let provider: BubblewrapProvider;
let n = 0;
const key = (): string => `r2e-${process.pid}-${n++}`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'r2e-hidden-'));
  // A directory of the repository holding a symlink out of it.
  await mkdir(join(dir, 'docs'));
  await symlink('/etc', join(dir, 'docs', 'out'));
  const image = await buildImage({
    layout: join(dir, 'layout'),
    layers: [
      {
        files: {
          '/testbed/mathx/__init__.py': SOURCE,
          '/testbed/docs': { copyFrom: join(dir, 'docs') },
          '/testbed/run_tests.sh': 'python3 -m pytest -p no:cacheprovider -rA r2e_tests\n',
          '/r2e_tests/test_1.py': TESTS,
        },
      },
    ],
  });
  const row = {
    repo_name: 'mathx',
    docker_image: image,
    commit_hash: 'a'.repeat(40),
    parsed_commit_content: JSON.stringify({ old_commit_hash: 'b'.repeat(40), file_diffs: [] }),
    problem_statement: 'clamp() ignores its upper bound.',
    expected_output_json: JSON.stringify({
      test_low: 'PASSED',
      'TestClamp.test_high': 'PASSED',
      'TestClamp.test_broken - assert False': 'FAILED',
    }),
  };
  await writeFile(join(dir, 'r2e.jsonl'), `${JSON.stringify(row)}\n`);
  [task] = (await loadTasks(join(dir, 'r2e.jsonl'))) as [Task];
  images = new LocalImageStore({ cacheDir: join(dir, 'images') });
  provider = new BubblewrapProvider({ rootDir: join(dir, 'sandboxes'), images });
}, 110_000);

afterAll(async () => {
  await provider?.release();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const deps = (): { provider: BubblewrapProvider; images: LocalImageStore; workspaceCacheDir: string } => ({
  provider,
  images,
  workspaceCacheDir: join(dir, 'workspaces'),
});

async function probe(view: SandboxView, shell: string): Promise<string> {
  const info = await provider.create({ idempotencyKey: key(), ...(await taskSandboxSpec(task, view, deps())) });
  try {
    return (await provider.exec(info.id, { shell })).stdout;
  } finally {
    await provider.destroy(info.id);
  }
}

const LOOK = [
  'ls /r2e_tests 2>&1 | head -1',
  'test -e /testbed/run_tests.sh && echo script || echo no-script',
  'ls /workspace | tr "\\n" " "; echo',
  'test -x /usr/bin/python3 && echo python',
].join('; ');

describe('hidden image paths', () => {
  it('are invisible to the agent, outside and inside the workspace, and present for the reward', async () => {
    const agent = await probe('agent', LOOK);
    expect(agent).toBe('ls: cannot access \'/r2e_tests\': No such file or directory\nno-script\ndocs mathx \npython\n');
    const reward = await probe('reward', LOOK);
    expect(reward).toBe('test_1.py\nscript\ndocs mathx run_tests.sh \npython\n');
  }, 60_000);

  it('refuse a path in the workspace reached through a symlink of the image', async () => {
    const through = TaskSchema.parse({
      ...task,
      environment: { ...task.environment, hidden_paths: ['/testbed/docs/out/passwd'] },
    });
    await expect(taskSandboxSpec(through, 'agent', deps())).rejects.toThrow(
      'cannot leave out docs/out/passwd: docs/out is not a directory in the image',
    );
  });

  it('refuse a path on the workspace link or through a symlink of the image, as an invalid spec', async () => {
    const spec = await taskSandboxSpec(task, 'reward', deps());
    const cases: [string, RegExp][] = [
      ['/testbed/x', /overlaps a mount, the workspace link/],
      ['/bin/ls', /\/bin is not a directory in the image/],
    ];
    for (const [hidden, reason] of cases) {
      const made = provider.create({ idempotencyKey: key(), ...spec, hiddenImagePaths: [hidden] });
      await expect(made).rejects.toBeInstanceOf(InvalidSandboxSpecError);
      await expect(made).rejects.toThrow(reason);
    }
  });
});

describe('evaluateReward on an R2E-Gym task', () => {
  const reward = (agentDiff: string): ReturnType<typeof evaluateReward> =>
    evaluateReward(deps(), { task, agentDiff, idempotencyKey: key() });

  it('gives the gold fix 1 and an empty diff 0, with no canaries', async () => {
    const gold = await reward(GOLD);
    expect(gold).toMatchObject({ reward: 1, reason: 'resolved', canaries: 0 });
    expect(gold.tests).toEqual({ 'r2e_tests::test_low': 'passed', 'r2e_tests::TestClamp.test_high': 'passed' });
    const empty = await reward('');
    expect(empty).toMatchObject({ reward: 0, reason: 'unresolved' });
    expect(empty.tests['r2e_tests::TestClamp.test_high']).toBe('failed');
  }, 60_000);

  it('drops the sections of a diff that write into the hidden paths', async () => {
    const forged = 'echo "PASSED r2e_tests/test_1.py::test_low"\necho "PASSED r2e_tests/test_1.py::TestClamp::test_high"\n';
    const attack = newFileDiff('run_tests.sh', forged) + newFileDiff('r2e_tests/helpers.py', 'x = 1\n');
    const r = await reward(attack);
    expect(r.dropped).toEqual(['run_tests.sh', 'r2e_tests/helpers.py']);
    expect(r).toMatchObject({ reward: 0, reason: 'unresolved' });
    expect(r.tests['r2e_tests::TestClamp.test_high']).toBe('failed');
  }, 60_000);
});
