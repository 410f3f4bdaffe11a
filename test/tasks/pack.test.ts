import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it, expect } from 'vitest';
import { builtinPackDir, loadTaskPack } from '../../tasks/loader.js';
import type { Task } from '../../tasks/schema.js';
import { checkout, gitApply, parseJunit, removeDir, runTests, type Outcome } from './harness.js';

const tasks: Task[] = await loadTaskPack(builtinPackDir());

function addedFiles(patch: string): string[] {
  return [...patch.matchAll(/^diff --git a\/\S+ b\/(\S+)\nnew file mode/gm)].map((m) => m[1] ?? '');
}

function touchedFiles(patch: string): string[] {
  return [...patch.matchAll(/^diff --git a\/(\S+) b\//gm)].map((m) => m[1] ?? '');
}

function failing(outcomes: Map<string, Outcome>): string[] {
  return [...outcomes].filter(([, o]) => o !== 'pass').map(([id]) => id);
}

describe('junit report parsing', () => {
  it('joins nested describe names with " > " and reads failures', () => {
    const xml = `<?xml version="1.0" encoding="utf-8"?>
<testsuites>
  <testcase name="top &lt;level>" time="0.1" classname="test"/>
  <testsuite name="outer" time="0.1" tests="2" failures="1">
    <testsuite name="inner" time="0.1" tests="1" failures="1">
      <testcase name="deep" time="0.1" classname="test" failure="1 > 2">
        <failure type="testCodeFailure" message="1 > 2">at &lt;anonymous></failure>
      </testcase>
    </testsuite>
    <testcase name="shallow" time="0.1" classname="test"/>
  </testsuite>
</testsuites>`;
    expect(Object.fromEntries(parseJunit(xml))).toEqual({
      'top <level>': 'pass',
      'outer > inner > deep': 'fail',
      'outer > shallow': 'pass',
    });
  });
});

describe('built-in task pack', () => {
  it('holds 4 node-test and 4 unittest tasks', () => {
    expect(tasks).toHaveLength(8);
    expect(tasks.filter((t) => t.test_framework === 'node-test')).toHaveLength(4);
    expect(tasks.filter((t) => t.test_framework === 'unittest')).toHaveLength(4);
  });

  for (const task of tasks) {
    describe(task.instance_id, () => {
      it('keeps hidden tests and the fix out of the repository', () => {
        expect(task.patch.startsWith('diff --git a/')).toBe(true);
        expect(task.test_patch.startsWith('diff --git a/')).toBe(true);
        const hidden = addedFiles(task.test_patch);
        expect(hidden.length).toBeGreaterThan(0);
        expect(touchedFiles(task.test_patch)).toEqual(hidden);
        for (const file of hidden) {
          expect(file).toMatch(
            task.test_framework === 'node-test' ? /^test\/.+\.test\.js$/ : /^tests\/test_.+\.py$/,
          );
          expect(existsSync(join(task.workspace.path, file))).toBe(false);
        }
        for (const file of touchedFiles(task.patch)) expect(file).not.toMatch(/^tests?\//);
        expect(task.FAIL_TO_PASS.filter((id) => task.PASS_TO_PASS.includes(id))).toEqual([]);
        if (task.test_framework === 'node-test') {
          // Node's junit reporter double-escapes quotes, so such names could never match an id.
          for (const id of [...task.FAIL_TO_PASS, ...task.PASS_TO_PASS])
            expect(id).not.toMatch(/["&<]/);
        }
      });

      it('fails FAIL_TO_PASS before the gold patch and passes everything after it', async () => {
        const dir = await checkout(task);
        try {
          const visible = await runTests(dir, task.test_framework!);
          expect(visible.size).toBeGreaterThan(0);
          expect(failing(visible)).toEqual([]);
          expect([...visible.keys()].filter((id) => !task.PASS_TO_PASS.includes(id))).toEqual([]);

          await gitApply(dir, task.test_patch);
          const before = await runTests(dir, task.test_framework!);
          for (const id of task.FAIL_TO_PASS)
            expect([id, before.get(id)]).toEqual([id, expect.stringMatching(/^(fail|error)$/)]);
          for (const id of task.PASS_TO_PASS) expect([id, before.get(id)]).toEqual([id, 'pass']);

          await gitApply(dir, task.patch);
          const after = await runTests(dir, task.test_framework!);
          for (const id of [...task.FAIL_TO_PASS, ...task.PASS_TO_PASS]) {
            expect([id, after.get(id)]).toEqual([id, 'pass']);
          }
          expect(failing(after)).toEqual([]);
        } finally {
          await removeDir(dir);
        }
      });
    });
  }
});
