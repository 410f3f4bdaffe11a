/**
 * A batch whose task names its own OCI image, pushed to a real registry started for the test:
 * the agent's sandbox and the reward's are built from that image (its files, its interpreter's
 * packages, its repository at /testbed with the history dropped), never from the host.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBatchInput, followBatch, startBatch } from '../../stack/batches.js';
import { startStack, type Stack } from '../../stack/stack.js';
import { BubblewrapProvider } from '../../sandbox/bubblewrap.js';
import { LocalImageStore } from '../../sandbox/images/index.js';
import { loadTasks } from '../../tasks/loader.js';
import { taskSandboxSpec } from '../../tasks/task-sandbox.js';
import { buildImage, pushImage } from '../helpers/oci-image.js';
import { startRegistry, type TestRegistry } from '../helpers/registry.js';
import { startTestEngines, testConfig, type TestEngines } from '../helpers/stack.js';

const execFileAsync = promisify(execFile);

const SOURCE = `from rollout_image_tools import MARKER


def clamp(x, lo, hi):
    """Clamps x into [lo, hi]."""
    return max(lo, x)
`;

const VISIBLE_TESTS = `from mathx import clamp


def test_low():
    assert clamp(-1, 0, 5) == 0


def test_image_file():
    with open('/etc/rollout-image-marker') as f:
        assert f.read().strip() == 'built-into-the-image'
`;

const GOLD = `diff --git a/mathx/__init__.py b/mathx/__init__.py
--- a/mathx/__init__.py
+++ b/mathx/__init__.py
@@ -3,4 +3,4 @@ from rollout_image_tools import MARKER
 
 def clamp(x, lo, hi):
     """Clamps x into [lo, hi]."""
-    return max(lo, x)
+    return min(hi, max(lo, x))
`;

const HIDDEN = `diff --git a/tests/test_high.py b/tests/test_high.py
new file mode 100644
--- /dev/null
+++ b/tests/test_high.py
@@ -0,0 +1,5 @@
+from mathx import clamp
+
+
+def test_high():
+    assert clamp(9, 0, 5) == 5
`;

let registry: TestRegistry | undefined;
let engines: TestEngines | undefined;
let stack: Stack | undefined;
let dir = '';
let planted = '';

/** A repository with two commits, the second the fix: the image's /testbed keeps its history. */
async function repositoryWithHistory(): Promise<string> {
  const repo = join(dir, 'repo');
  await mkdir(join(repo, 'mathx'), { recursive: true });
  await mkdir(join(repo, 'tests'), { recursive: true });
  await writeFile(join(repo, 'tests', 'test_basic.py'), VISIBLE_TESTS);
  // A root conftest.py puts the repository on pytest's import path.
  await writeFile(join(repo, 'conftest.py'), '');
  await writeFile(join(repo, 'mathx', '__init__.py'), SOURCE.replace('max(lo, x)', 'min(hi, max(lo, x))'));
  const git = (...args: string[]): Promise<unknown> =>
    execFileAsync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args]);
  await git('init', '-q');
  await git('add', '-A');
  await git('commit', '-qm', 'the fix, committed upstream');
  await writeFile(join(repo, 'mathx', '__init__.py'), SOURCE);
  return repo;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-image-'));
  registry = await startRegistry();
  const layout = await buildImage({
    layout: join(dir, 'layout'),
    layers: [
      {
        files: {
          '/testbed': { copyFrom: await repositoryWithHistory() },
          '/usr/lib/python3/dist-packages/rollout_image_tools.py': "MARKER = 'from-the-image'\n",
          '/etc/rollout-image-marker': 'built-into-the-image\n',
        },
      },
    ],
  });
  const image = await pushImage(layout, registry.host, 'tasks/mathx:1');
  await writeFile(
    join(dir, 'tasks.jsonl'),
    JSON.stringify({
      instance_id: 'img-mathx-1',
      repo: 'example/mathx',
      problem_statement: 'clamp() ignores its upper bound.\n\nclamp(9, 0, 5) returns 9 instead of 5.',
      patch: GOLD,
      test_patch: HIDDEN,
      FAIL_TO_PASS: ['tests/test_high.py::test_high'],
      PASS_TO_PASS: ['tests/test_basic.py::test_low', 'tests/test_basic.py::test_image_file'],
      environment: { image },
      workspace: { kind: 'image', path: '/testbed' },
      test_framework: 'pytest',
    }) + '\n',
  );
  // A host file outside every known path: no sandbox may read it.
  planted = join('/var/lib', `rollout-planted-${process.pid}`);
  await writeFile(planted, 'host secret\n');
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  await engines?.close();
  await registry?.stop();
  await rm(planted, { force: true });
  await rm(dir, { recursive: true, force: true });
});

describe('a batch whose task names an OCI image in a local registry', () => {
  it('runs the agent and the reward in that image, not on the host', async () => {
    const tasksFile = join(dir, 'tasks.jsonl');
    const tasks = await loadTasks(tasksFile);
    engines = await startTestEngines({ count: 1, wanderProbability: 0, tasks });
    const config = testConfig({
      engines: engines.instances,
      sandbox: { images: { insecureRegistries: [registry!.host] } },
      batch: { taskRoots: [dir] },
    });
    stack = await startStack(config);
    const batchId = `image-${Date.now()}`;
    const input = await buildBatchInput(config, { batchId, tasks: tasksFile, n: 2, agent: 'builtin' });
    const manifest = await followBatch(await startBatch(stack.client, config, input), () => undefined);

    expect(manifest.status).toBe('complete');
    // The hidden and visible tests import a module and read a file only the image has.
    expect(manifest.groups.flatMap((g) => g.rewards)).toEqual([1, 1]);

    for (const episode of await stack.store.listEpisodes(batchId)) {
      const turns = await stack.store.loadTurns(episode.sessionId!);
      const seen = turns.map((t) => t.messagesJson).join('\n');
      // The agent read the image's /testbed (its import of the image-only module) …
      expect(seen).toContain('from rollout_image_tools import MARKER');
      // … and ran the visible tests with the image's interpreter and files: both pass.
      expect(seen).toMatch(/2 passed/);
    }
  }, 600_000);

  it('gives the agent a fresh repository of the image at /testbed and nothing of the host', async () => {
    const [task] = await loadTasks(join(dir, 'tasks.jsonl'));
    const images = new LocalImageStore({ cacheDir: join(dir, 'images'), insecureRegistries: [registry!.host] });
    const provider = new BubblewrapProvider({ rootDir: join(dir, 'sandboxes'), images });
    const info = await provider.create({
      idempotencyKey: `probe-${Date.now()}`,
      ...(await taskSandboxSpec(task!, 'agent', { images, workspaceCacheDir: join(dir, 'workspaces') })),
    });
    try {
      const run = async (shell: string): Promise<string> => {
        const r = await provider.exec(info.id, { shell });
        return `${r.exitCode}:${r.stdout.trim()}`;
      };
      // The image's repository had the fix in its history: the sandbox has one fresh commit.
      expect(await run('git log --format=%s')).toBe('0:base');
      expect(await run('grep -c "min(hi" mathx/__init__.py')).toBe('1:0');
      expect(await run('cat /etc/rollout-image-marker')).toBe('0:built-into-the-image');
      expect(await run("python3 -c 'import rollout_image_tools as m; print(m.MARKER)'")).toBe('0:from-the-image');
      expect(await run('readlink /testbed')).toBe('0:/workspace');
      expect(await run(`cat ${planted} 2>/dev/null || echo unreadable`)).toBe('0:unreadable');
      expect(await run('ls -d /work /var/lib/rollout-planted-* 2>/dev/null | wc -l')).toBe('0:0');
    } finally {
      await provider.destroy(info.id);
      await provider.release();
    }
  }, 180_000);
});
