import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it, expect } from 'vitest';
import { builtinPackDir, loadTaskPack } from '../../tasks/loader.js';
import type { Task } from '../../tasks/schema.js';
import { scriptForTask, type ScriptedTurn } from '../../tasks/solution-script.js';
import { checkout, gitApply, removeDir, run, runTests, type Outcome } from './harness.js';

const tasks: Task[] = await loadTaskPack(builtinPackDir());
const TOOLS = ['shell', 'write_file', 'submit'];

interface Replay {
  shellExitCodes: number[];
  hidden: Map<string, Outcome>;
}

/** Plays the turns the way the built-in agent would in /workspace, then runs the hidden tests. */
async function replay(task: Task, turns: ScriptedTurn[]): Promise<Replay> {
  const dir = await checkout(task);
  try {
    const shellExitCodes: number[] = [];
    for (const turn of turns) {
      const tool = turn.tool;
      if (tool?.name === 'shell') {
        const result = await run('/bin/sh', ['-c', String(tool.arguments.command)], dir);
        shellExitCodes.push(result.exitCode);
      } else if (tool?.name === 'write_file') {
        await writeFile(join(dir, String(tool.arguments.path)), String(tool.arguments.content));
      } else if (tool?.name === 'submit') {
        break;
      }
    }
    await gitApply(dir, task.test_patch);
    return { shellExitCodes, hidden: await runTests(dir, task.test_framework!) };
  } finally {
    await removeDir(dir);
  }
}

function resolved(task: Task, hidden: Map<string, Outcome>): boolean {
  return [...task.FAIL_TO_PASS, ...task.PASS_TO_PASS].every((id) => hidden.get(id) === 'pass');
}

describe('scripted solutions', () => {
  it('gives every task a distinct match string', () => {
    const matches = tasks.map((t) => scriptForTask(t).match);
    expect(new Set(matches).size).toBe(tasks.length);
    for (const task of tasks) {
      const script = scriptForTask(task);
      expect(script.match.length).toBeGreaterThan(10);
      expect(script.match.length).toBeLessThanOrEqual(80);
      for (const other of tasks) {
        expect(other.problem_statement.includes(script.match)).toBe(other === task);
      }
    }
  });

  for (const task of tasks) {
    describe(task.instance_id, () => {
      const script = scriptForTask(task);

      it('has one tool call per turn, distinct first thoughts and a final submit', () => {
        expect(script.taskId).toBe(task.instance_id);
        expect(script.solve[0]?.thought).not.toBe(script.wander[0]?.thought);
        for (const turns of [script.solve, script.wander]) {
          for (const turn of turns) {
            expect(turn.thought.length).toBeGreaterThan(0);
            expect(TOOLS).toContain(turn.tool?.name);
          }
          expect(turns.at(-1)?.tool?.name).toBe('submit');
        }
      });

      it('solve fixes the hidden tests', async () => {
        const { shellExitCodes, hidden } = await replay(task, script.solve);
        expect(shellExitCodes.every((code) => code === 0)).toBe(true);
        expect(resolved(task, hidden)).toBe(true);
      });

      it('wander leaves FAIL_TO_PASS failing', async () => {
        const { shellExitCodes, hidden } = await replay(task, script.wander);
        expect(shellExitCodes[0]).toBe(0);
        expect(task.FAIL_TO_PASS.some((id) => hidden.get(id) !== 'pass')).toBe(true);
        expect(resolved(task, hidden)).toBe(false);
      });
    });
  }

  it('falls back to a generic script for tasks it has no hints for', async () => {
    const base = tasks.find((t) => t.instance_id === 'py-word-wrap-1');
    if (!base) throw new Error('py-word-wrap-1 is missing from the pack');
    const task: Task = { ...base, instance_id: 'external-task-1' };
    const script = scriptForTask(task);
    expect(script.solve[0]?.thought).not.toBe(script.wander[0]?.thought);
    const solved = await replay(task, script.solve);
    expect(solved.shellExitCodes.every((code) => code === 0)).toBe(true);
    expect(resolved(task, solved.hidden)).toBe(true);
    const wandered = await replay(task, script.wander);
    expect(resolved(task, wandered.hidden)).toBe(false);
  });
});
