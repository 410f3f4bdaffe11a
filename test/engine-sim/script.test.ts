import { beforeAll, describe, expect, it } from 'vitest';
import type { SyncTokenizer } from '../../gateway/codec/tokenizer.js';
import { PolicyScriptSchema, pythonJson, renderTurn } from '../../engine-sim/index.js';
import { ScriptedPolicy } from '../../engine-sim/script.js';
import { createRng } from '../../engine-sim/prng.js';
import { SCRIPT, firstPrompt, loadTokenizer } from './helpers.js';

let tk: SyncTokenizer;
beforeAll(async () => {
  tk = await loadTokenizer();
});

describe('scripted policy', () => {
  it('prints JSON as Python json.dumps does', () => {
    expect(
      pythonJson({ a: 'x', b: [1, 2.5, null, true, false], c: {}, d: [], e: 1e-7, f: 'é"\n' }),
    ).toBe(
      '{"a": "x", "b": [1, 2.5, null, true, false], "c": {}, "d": [], "e": 1e-07, "f": "é\\"\\n"}',
    );
  });

  it('renders turns as the Qwen3 chat template renders them', () => {
    expect(renderTurn({ thought: '\nhmm\n', tool: null, content: '\nAnswer' })).toBe(
      '<think>\nhmm\n</think>\n\nAnswer',
    );
    expect(
      renderTurn({ thought: 't', tool: { name: 'f', arguments: { x: 1 } }, content: 'Calling f.' }),
    ).toBe(
      '<think>\nt\n</think>\n\nCalling f.\n<tool_call>\n{"name": "f", "arguments": {"x": 1}}\n</tool_call>',
    );
  });

  it('applies schema defaults', () => {
    expect(PolicyScriptSchema.parse({})).toEqual({
      answers: [],
      tasks: [],
      wanderProbability: 0.3,
    });
    const parsed = PolicyScriptSchema.parse({
      tasks: [{ taskId: 't', match: 'm', solve: [{ thought: 'x' }] }],
    });
    expect(parsed.tasks[0]).toEqual({
      taskId: 't',
      match: 'm',
      solve: [{ thought: 'x', tool: null }],
      wander: [],
    });
    expect(() => PolicyScriptSchema.parse({ wanderProbability: 2 })).toThrow();
  });

  it('matches the task in the first user message only', () => {
    const policy = new ScriptedPolicy(
      PolicyScriptSchema.parse({ ...SCRIPT, wanderProbability: 0 }),
      tk,
    );
    const inSystem = firstPrompt(tk, 'something else', 'Fix the failing test in calc.py');
    expect(policy.respond(inSystem, createRng(1))).toMatchObject({
      taskId: null,
      branch: null,
      turn: 0,
    });
    const inUser = firstPrompt(tk, 'Please: Fix the failing test in calc.py');
    expect(policy.respond(inUser, createRng(1))).toMatchObject({
      taskId: 'fix-bug',
      branch: 'solve',
      turn: 0,
    });
  });

  it('gives a fixed answer, before any task, to a prompt that holds all its strings', () => {
    const policy = new ScriptedPolicy(
      PolicyScriptSchema.parse({
        ...SCRIPT,
        wanderProbability: 0,
        answers: [
          { when: ['You are a judge', 'Fix the failing test'], content: '{"score": 1}' },
          { when: ['You are a judge'], thought: 'Unsure.', content: '{"score": 0}' },
        ],
      }),
      tk,
    );
    const text = (prompt: number[]) => {
      const out = policy.respond(prompt, createRng(1));
      return { taskId: out.taskId, text: tk.decode(out.tokenIds) };
    };
    expect(
      text(firstPrompt(tk, 'Quoted: Fix the failing test in calc.py', 'You are a judge')),
    ).toEqual({
      taskId: null,
      text: '<think>\n\n</think>\n\n{"score": 1}<|im_end|>',
    });
    expect(text(firstPrompt(tk, 'something else', 'You are a judge')).text).toBe(
      '<think>\nUnsure.\n</think>\n\n{"score": 0}<|im_end|>',
    );
    // Without every string, the task script answers as before.
    expect(text(firstPrompt(tk, 'Fix the failing test in calc.py')).taskId).toBe('fix-bug');
  });

  it('continues after a pre-filled think block when thinking is switched off', () => {
    const policy = new ScriptedPolicy(
      PolicyScriptSchema.parse({ ...SCRIPT, wanderProbability: 0 }),
      tk,
    );
    const prompt = [
      ...firstPrompt(tk, 'Fix the failing test in calc.py'),
      ...tk.encode('<think>\n\n</think>\n\n'),
    ];
    const out = policy.respond(prompt, createRng(1));
    expect(tk.decode(out.tokenIds)).toBe(
      '<tool_call>\n{"name": "bash", "arguments": {"command": "ls -la", "timeout": 30}}\n</tool_call><|im_end|>',
    );
    const prefilled = [
      ...firstPrompt(tk, 'Fix the failing test in calc.py'),
      ...tk.encode('<think>\n'),
    ];
    expect(tk.decode(policy.respond(prefilled, createRng(1)).tokenIds)).toMatch(
      /^I should look at the files first\.\n<\/think>/,
    );
  });
});
