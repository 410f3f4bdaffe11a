import { beforeAll, describe, expect, it } from 'vitest';
import type { SyncTokenizer } from '../../gateway/codec/tokenizer.js';
import { PolicyScriptSchema, pythonJson, renderTurn } from '../../engine-sim/index.js';
import { ScriptedPolicy } from '../../engine-sim/script.js';
import { createRng } from '../../engine-sim/prng.js';
import {
  CODEX_SHELL,
  EXEC_COMMAND,
  GENERIC_SCRIPT,
  SCRIPT,
  SYSTEM,
  TASK,
  firstPrompt,
  loadTokenizer,
} from './helpers.js';

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

  it('finds the task in any user message, then in system turns, never in a tool result', () => {
    const policy = new ScriptedPolicy(
      PolicyScriptSchema.parse({ ...SCRIPT, wanderProbability: 0 }),
      tk,
    );
    const taskOf = (text: string) => policy.respond(tk.encode(text), createRng(1)).taskId;
    const agent = `${SYSTEM}\n\n<tools>\n${JSON.stringify(EXEC_COMMAND)}\n</tools>`;
    // Codex opens with its environment; the task is the second user message.
    const codex = (system: string) =>
      `<|im_start|>system\n${system}<|im_end|>\n<|im_start|>user\n<environment_context>\n  <cwd>/work</cwd>\n</environment_context><|im_end|>\n<|im_start|>user\n${TASK}<|im_end|>\n<|im_start|>assistant\n`;
    expect(taskOf(codex(agent))).toBe('fix-bug');
    // No user message holds it: the system turn is searched.
    expect(taskOf(tk.decode(firstPrompt(tk, 'something else', `${TASK}\n${agent}`)))).toBe(
      'fix-bug',
    );
    // A command's output quoting the task is not the task.
    expect(
      taskOf(
        `<|im_start|>system\n${agent}<|im_end|>\n<|im_start|>user\nsomething else<|im_end|>\n<|im_start|>assistant\nok<|im_end|>\n<|im_start|>user\n<tool_response>\n${TASK}\n</tool_response><|im_end|>\n<|im_start|>assistant\n`,
      ),
    ).toBeNull();
    // Without tools, a request quoting the task after its own instruction (a title request) is
    // searched in its first user message only.
    expect(taskOf(codex('Generate a title for this conversation.'))).toBeNull();
    expect(taskOf(tk.decode(firstPrompt(tk, 'something else', TASK)))).toBeNull();
    expect(taskOf(tk.decode(firstPrompt(tk, TASK)))).toBe('fix-bug');
  });

  it('takes a task in a user message over one in the system turn, the first message first', () => {
    const other = { taskId: 'other', match: 'Rename the module', solve: [{ thought: 'x' }] };
    const policy = new ScriptedPolicy(
      PolicyScriptSchema.parse({ ...SCRIPT, tasks: [other, ...SCRIPT.tasks!] }),
      tk,
    );
    const taskOf = (prompt: number[]) => policy.respond(prompt, createRng(1)).taskId;
    const agent = `Rename the module\n\n<tools>\n${JSON.stringify(EXEC_COMMAND)}\n</tools>`;
    expect(taskOf(firstPrompt(tk, TASK, agent))).toBe('fix-bug');
    expect(taskOf(firstPrompt(tk, 'something else', agent))).toBe('other');
    expect(taskOf(firstPrompt(tk, `${TASK}; Rename the module`))).toBe('other');
  });

  it('calls a Codex exec_command with `cmd` and a Codex shell with an argv', () => {
    const policy = new ScriptedPolicy(PolicyScriptSchema.parse(GENERIC_SCRIPT), tk);
    const codex = (tool: object) =>
      `You are Codex.\n\n# Tools\n\n<tools>\n${JSON.stringify(tool)}\n</tools>`;
    const call = (system: string) => {
      const text = tk.decode(policy.respond(firstPrompt(tk, TASK, system), createRng(1)).tokenIds);
      return JSON.parse(/<tool_call>\n(.*)\n<\/tool_call>/.exec(text)![1]!) as unknown;
    };
    expect(call(codex(EXEC_COMMAND))).toEqual({
      name: 'exec_command',
      arguments: { cmd: 'ls -la' },
    });
    expect(call(codex(CODEX_SHELL))).toEqual({
      name: 'shell',
      arguments: { command: ['bash', '-lc', 'ls -la'] },
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
