import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskCatalog, taskSourcePath } from '../../activities/task-catalog.js';
import { BatchRequestError, buildBatchInput } from '../../stack/batches.js';
import { ConfigSchema } from '../../stack/config.js';

let root = '';

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'batch-tasks-'));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

function rebenchRow(id: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    instance_id: id,
    repo: 'wtforms/wtforms',
    base_commit: '848d28d',
    patch: 'diff --git a/a b/a\n',
    test_patch: 'diff --git a/t.py b/t.py\n',
    problem_statement: 'Field flags are lost',
    FAIL_TO_PASS: ['tests/test_m.py::test_flags'],
    PASS_TO_PASS: [],
    image_name: 'docker.io/swerebenchv2/wtforms-wtforms:614-848d28d',
    install_config: { test_cmd: 'pytest -rA tests', log_parser: 'parse_log_pytest' },
    ...overrides,
  };
}

describe('a batch over a published dataset', () => {
  const config = (): ReturnType<typeof ConfigSchema.parse> => ConfigSchema.parse({ batch: { taskRoots: [root] } });

  it('carries the detected format in its task source, which the worker loads the same way', async () => {
    const file = join(root, 'train.jsonl');
    await writeFile(file, [rebenchRow('w__w-1'), rebenchRow('w__w-2')].map((r) => JSON.stringify(r)).join('\n'));
    const input = await buildBatchInput(config(), { tasks: file, n: 2, agent: 'builtin' });
    expect(input.taskSource).toBe(`swe-rebench:${file}`);
    expect(input.taskIds).toEqual(['w__w-1', 'w__w-2']);
    expect(taskSourcePath(input.taskSource)).toBe(file);
    const task = await new TaskCatalog().get(input.taskSource, 'w__w-2');
    expect(task.environment.image).toBe('docker.io/swerebenchv2/wtforms-wtforms:614-848d28d');
    expect(task.log_parser).toBe('pytest');
  });

  it('does not start when a task fails its load-time checks, naming the row and field', async () => {
    const file = join(root, 'bad-ids.jsonl');
    const bad = rebenchRow('w__w-4', { FAIL_TO_PASS: ['test_flags'] });
    await writeFile(file, [rebenchRow('w__w-3'), bad].map((r) => JSON.stringify(r)).join('\n'));
    const started = buildBatchInput(config(), { tasks: `swe-rebench:${file}`, n: 1, agent: 'builtin' });
    await expect(started).rejects.toThrow(BatchRequestError);
    await expect(started).rejects.toThrow(`${file}:2: task w__w-4: FAIL_TO_PASS[0]: "test_flags" is not a pytest test id`);
  });

  it('keeps the root check on the path behind a format prefix', async () => {
    const started = buildBatchInput(config(), { tasks: 'swe-bench:/etc/passwd.jsonl', n: 1, agent: 'builtin' });
    await expect(started).rejects.toThrow(/outside batch\.taskRoots/);
  });
});
