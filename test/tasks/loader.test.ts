import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { afterAll, beforeAll, describe, it, expect } from 'vitest';
import {
  TaskLoadError,
  builtinPackDir,
  loadTaskFile,
  loadTaskPack,
  loadTasks,
} from '../../tasks/loader.js';

let root = '';

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'task-loader-'));
  await mkdir(join(root, 'repos', 'demo'), { recursive: true });
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

function sweTask(id: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    instance_id: id,
    repo: 'example/demo',
    base_commit: 'abc123',
    problem_statement: 'Something is broken',
    patch: 'diff --git a/x b/x\n',
    test_patch: 'diff --git a/t b/t\n',
    FAIL_TO_PASS: '["tests.test_x.T.test_a"]',
    PASS_TO_PASS: [],
    workspace: { kind: 'dir', path: 'repos/demo' },
    test_framework: 'unittest',
    ...overrides,
  };
}

async function write(name: string, content: string): Promise<string> {
  const file = join(root, name);
  await writeFile(file, content);
  return file;
}

async function loadError(load: Promise<unknown>): Promise<TaskLoadError> {
  const err: unknown = await load.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TaskLoadError);
  return err as TaskLoadError;
}

describe('loadTaskFile', () => {
  it('reads a JSON array, resolving relative workspaces and JSON-encoded test lists', async () => {
    const file = await write('array.json', JSON.stringify([sweTask('a-1'), sweTask('a-2')]));
    const tasks = await loadTaskFile(file);
    expect(tasks.map((t) => t.instance_id)).toEqual(['a-1', 'a-2']);
    expect(tasks[0]?.workspace.path).toBe(join(root, 'repos', 'demo'));
    expect(tasks[0]?.FAIL_TO_PASS).toEqual(['tests.test_x.T.test_a']);
    expect(tasks[0]?.timeouts.test_s).toBe(60);
  });

  it('reads a single JSON object and JSONL with blank lines', async () => {
    expect(
      await loadTaskFile(await write('one.json', JSON.stringify(sweTask('b-1')))),
    ).toHaveLength(1);
    const lines = [JSON.stringify(sweTask('c-1')), '', JSON.stringify(sweTask('c-2')), ''];
    const tasks = await loadTaskFile(await write('lines.jsonl', lines.join('\n')));
    expect(tasks.map((t) => t.instance_id)).toEqual(['c-1', 'c-2']);
  });

  it('reports a missing file', async () => {
    const missing = join(root, 'nope.jsonl');
    const err = await loadError(loadTaskFile(missing));
    expect(err.file).toBe(missing);
    expect(err.message).toContain('file not found');
  });

  it('reports malformed JSON with the JSONL line number', async () => {
    const file = await write('bad.jsonl', `${JSON.stringify(sweTask('d-1'))}\n{"instance_id": \n`);
    const err = await loadError(loadTaskFile(file));
    expect(err.line).toBe(2);
    expect(err.message).toContain(`${file}:2: malformed JSON`);
  });

  it('reports malformed JSON in a .json file', async () => {
    const err = await loadError(loadTaskFile(await write('bad.json', '[{"instance_id": "x",]')));
    expect(err.line).toBeUndefined();
    expect(err.message).toContain('malformed JSON');
  });

  it('reports a schema violation with zod’s message', async () => {
    const bad = sweTask('e-1', { test_framework: 'rspec' });
    const file = await write(
      'schema.jsonl',
      `${JSON.stringify(sweTask('e-0'))}\n${JSON.stringify(bad)}\n`,
    );
    const err = await loadError(loadTaskFile(file));
    expect(err.line).toBe(2);
    expect(err.message).toContain('invalid task e-1');
    expect(err.message).toContain('→ at test_framework');
  });

  it('reports a cross-field violation once the fields themselves are valid', async () => {
    // The cross-field rules run only when every field parses (zod's superRefine), so this row
    // is otherwise valid.
    const file = await write('empty-f2p.json', JSON.stringify(sweTask('e-2', { FAIL_TO_PASS: [] })));
    const err = await loadError(loadTaskFile(file));
    expect(err.message).toContain('FAIL_TO_PASS must name at least one test');
    expect(err.message).toContain('→ at FAIL_TO_PASS');
  });

  it('takes hidden image paths in place of a test patch, on an image workspace only', async () => {
    const image = { workspace: { kind: 'image', path: '/testbed' }, test_patch: '' };
    const ok = sweTask('h-1', { ...image, environment: { image: 'r2e/demo:1', hidden_paths: ['/r2e_tests'] } });
    const [task] = await loadTaskFile(await write('hidden-ok.json', JSON.stringify(ok)));
    expect(task?.environment.hidden_paths).toEqual(['/r2e_tests']);
    const cases: [Record<string, unknown>, string][] = [
      [sweTask('h-2', { ...image, environment: { image: 'r2e/demo:1' } }), 'a tests reward needs the hidden test patch'],
      [sweTask('h-3', { environment: { hidden_paths: ['/r2e_tests'] } }), 'environment.hidden_paths needs an image workspace'],
      [sweTask('h-4', { ...image, environment: { image: 'r2e/demo:1', hidden_paths: ['/testbed'] } }), 'would hide the whole workspace'],
      [sweTask('h-5', { ...image, environment: { image: 'r2e/demo:1', hidden_paths: ['/a/../b'] } }), 'a normalised path'],
    ];
    for (const [i, [row, message]] of cases.entries()) {
      const err = await loadError(loadTaskFile(await write(`hidden-bad-${i}.json`, JSON.stringify(row))));
      expect(err.message).toContain(message);
    }
  });

  it('rejects an unknown key and suggests the key meant', async () => {
    const row = sweTask('e-3', { test_framwork: 'unittest' });
    delete row.test_framework;
    const err = await loadError(loadTaskFile(await write('typo.json', JSON.stringify(row))));
    expect(err.message).toContain('unknown key "test_framwork": did you mean "test_framework"?');
    const nested = sweTask('e-4', { workspace: { kind: 'dir', path: 'repos/demo', strip_component: 1 } });
    const nestedErr = await loadError(loadTaskFile(await write('typo-nested.json', JSON.stringify(nested))));
    expect(nestedErr.message).toContain('unknown key "workspace.strip_component": did you mean "strip_components"?');
  });

  it('reports a duplicate instance_id', async () => {
    const lines = [sweTask('f-1'), sweTask('f-2'), sweTask('f-1')].map((t) => JSON.stringify(t));
    const err = await loadError(loadTaskFile(await write('dup.jsonl', lines.join('\n'))));
    expect(err.line).toBe(3);
    expect(err.message).toContain('duplicate instance_id "f-1"');
  });

  it('reports a missing workspace directory', async () => {
    const task = sweTask('g-1', { workspace: { kind: 'dir', path: 'repos/gone' } });
    const err = await loadError(loadTaskFile(await write('ws.json', JSON.stringify(task))));
    expect(err.message).toContain(
      `workspace directory ${join(root, 'repos', 'gone')} does not exist`,
    );
  });

  it('rejects other file types', async () => {
    const err = await loadError(loadTaskFile(await write('tasks.yaml', 'a: 1')));
    expect(err.message).toContain('unsupported task file type');
  });
});

describe('loadTaskPack', () => {
  it('loads the built-in pack with patches and absolute workspaces', async () => {
    expect(isAbsolute(builtinPackDir())).toBe(true);
    const tasks = await loadTaskPack(builtinPackDir());
    expect(tasks.length).toBe(8);
    for (const task of tasks) {
      expect(task.workspace).toEqual({
        kind: 'dir',
        path: join(builtinPackDir(), task.instance_id, 'repo'),
      });
      expect(task.patch).toContain('diff --git');
      expect(task.test_patch).toContain('diff --git');
    }
  });

  it('reports a missing gold.patch, a folder/id mismatch and a schema violation', async () => {
    const pack = join(root, 'pack');
    const source = join(builtinPackDir(), 'py-slugify-1');
    await cp(source, join(pack, 'py-slugify-1'), { recursive: true });
    expect(await loadTasks(pack)).toHaveLength(1);

    await rm(join(pack, 'py-slugify-1', 'gold.patch'));
    let err = await loadError(loadTaskPack(pack));
    expect(err.file).toBe(join(pack, 'py-slugify-1', 'gold.patch'));

    await cp(source, join(pack, 'renamed'), { recursive: true });
    await rm(join(pack, 'py-slugify-1'), { recursive: true });
    err = await loadError(loadTaskPack(pack));
    expect(err.message).toContain('differs from its folder name "renamed"');

    await writeFile(join(pack, 'renamed', 'task.json'), '{"instance_id": "renamed"}');
    err = await loadError(loadTaskPack(pack));
    expect(err.file).toBe(join(pack, 'renamed', 'task.json'));
    expect(err.message).toContain('problem_statement');
  });

  it('reports a missing repo folder', async () => {
    const pack = join(root, 'pack-no-repo');
    await cp(join(builtinPackDir(), 'js-lru-cache-1'), join(pack, 'js-lru-cache-1'), {
      recursive: true,
    });
    await rm(join(pack, 'js-lru-cache-1', 'repo'), { recursive: true });
    const err = await loadError(loadTaskPack(pack));
    expect(err.message).toContain('workspace directory');
  });
});

describe('loadTasks', () => {
  it('dispatches on directory versus file and reports a missing source', async () => {
    expect(await loadTasks(builtinPackDir())).toHaveLength(8);
    expect(await loadTasks(await write('disp.json', JSON.stringify(sweTask('h-1'))))).toHaveLength(
      1,
    );
    const err = await loadError(loadTasks(join(root, 'absent')));
    expect(err.message).toContain('no such file or directory');
  });
});

describe('loadTaskFile with bundle and tarball workspaces', () => {
  it('accepts git-bundle and tarball workspaces relative to the file', async () => {
    await writeFile(join(root, 'repos', 'demo.bundle'), 'not read by the loader');
    await writeFile(join(root, 'repos', 'demo.tar.gz'), 'not read by the loader');
    const tasks = await loadTaskFile(
      await write(
        'kinds.jsonl',
        [
          sweTask('k-1', {
            base_commit: 'abc1234',
            workspace: { kind: 'git-bundle', path: 'repos/demo.bundle' },
          }),
          sweTask('k-2', { workspace: { kind: 'tarball', path: 'repos/demo.tar.gz' } }),
        ]
          .map((t) => JSON.stringify(t))
          .join('\n'),
      ),
    );
    expect(tasks.map((t) => t.workspace)).toEqual([
      { kind: 'git-bundle', path: join(root, 'repos', 'demo.bundle') },
      { kind: 'tarball', path: join(root, 'repos', 'demo.tar.gz'), strip_components: 0 },
    ]);
  });

  it('names the row of a JSON array and the field at fault', async () => {
    const rows = [
      sweTask('m-1'),
      sweTask('m-2', {
        workspace: { kind: 'git-bundle', path: 'repos/demo.bundle' },
        base_commit: 'base',
      }),
    ];
    const file = await write('rows.json', JSON.stringify(rows));
    const err = await loadError(loadTaskFile(file));
    expect(err.row).toBe(1);
    expect(err.message).toContain(`${file} [row 1]: invalid task m-2`);
    expect(err.message).toContain('→ at base_commit');
    expect(err.message).toContain('a git-bundle workspace needs base_commit');
  });

  it('names the workspace field when a bundle or tarball is missing or misnamed', async () => {
    const gone = sweTask('n-1', {
      base_commit: 'abc1234',
      workspace: { kind: 'git-bundle', path: 'repos/gone.bundle' },
    });
    let err = await loadError(loadTaskFile(await write('gone.jsonl', JSON.stringify(gone))));
    expect(err.line).toBe(1);
    expect(err.message).toContain(
      `workspace.path: workspace git-bundle file ${join(root, 'repos', 'gone.bundle')} does not exist`,
    );
    await writeFile(join(root, 'repos', 'demo.zip'), 'zip');
    const zip = sweTask('n-2', { workspace: { kind: 'tarball', path: 'repos/demo.zip' } });
    err = await loadError(loadTaskFile(await write('zip.json', JSON.stringify(zip))));
    expect(err.message).toContain('is not a .tar, .tar.gz or .tgz file');
  });

  it('lists the supported frameworks when a task names another one', async () => {
    const file = await write(
      'jasmine.json',
      JSON.stringify(sweTask('p-1', { test_framework: 'jasmine' })),
    );
    const err = await loadError(loadTaskFile(file));
    expect(err.message).toContain('→ at test_framework');
    expect(err.message).toMatch(/pytest.*unittest.*vitest.*node-test.*mocha.*jest/);
  });
});
