import { describe, expect, it } from 'vitest';
import type { ToolSpec } from '../../gateway/codec/index.js';
import { parseQwen3Turn } from '../../gateway/codec/tool-parser.js';
import { parseQwen3CoderTurn } from '../../gateway/codec/tool-parser-xml.js';

const tools: ToolSpec[] = [
  {
    type: 'function',
    function: {
      name: 'edit',
      parameters: {
        type: 'object',
        properties: {
          path: { type: 'string' },
          line: { type: 'integer' },
          dry_run: { type: 'boolean' },
          options: { type: 'object' },
          text: { type: 'string' },
        },
      },
    },
  },
];

describe('Qwen3 JSON tool calls', () => {
  it('splits reasoning, content and calls; keeps an invalid call as text', () => {
    const parsed = parseQwen3Turn(
      '<think>\nplan\n</think>\n\nLet me look.\n<tool_call>\n{"name": "shell", "arguments": {"command": "ls"}}\n</tool_call>\n<tool_call>\n{not json}\n</tool_call>',
    );
    expect(parsed.reasoning).toBe('plan');
    expect(parsed.toolCalls).toEqual([{ name: 'shell', arguments: { command: 'ls' } }]);
    expect(parsed.invalidToolCalls).toBe(1);
    expect(parsed.content).toContain('Let me look.');
    expect(parsed.content).toContain('{not json}');
  });

  it('takes reasoning that started in the generation prompt', () => {
    expect(parseQwen3Turn('thinking on\n</think>\n\nhi')).toMatchObject({ reasoning: 'thinking on', content: 'hi' });
  });
});

describe('Qwen3-Coder XML tool calls', () => {
  it('types each parameter by the declared schema', () => {
    const text =
      '<think>\nfix it\n</think>\n\nEditing now.\n<tool_call>\n<function=edit>\n<parameter=path>\nsrc/a.py\n</parameter>\n' +
      '<parameter=line>\n42\n</parameter>\n<parameter=dry_run>\nfalse\n</parameter>\n<parameter=options>\n{"indent": 4}\n</parameter>\n' +
      '<parameter=text>\n  two\nlines\n</parameter>\n</function>\n</tool_call>';
    const parsed = parseQwen3CoderTurn(text, tools);
    expect(parsed.reasoning).toBe('fix it');
    expect(parsed.content).toBe('Editing now.');
    expect(parsed.toolCalls).toEqual([
      { name: 'edit', arguments: { path: 'src/a.py', line: 42, dry_run: false, options: { indent: 4 }, text: '  two\nlines' } },
    ]);
  });

  it('keeps strings as strings even when they look like numbers, and parses several calls', () => {
    const call = (v: string) => `<tool_call>\n<function=edit>\n<parameter=path>\n${v}\n</parameter>\n</function>\n</tool_call>`;
    const parsed = parseQwen3CoderTurn(`${call('123')}\n${call('true')}`, tools);
    expect(parsed.toolCalls.map((c) => c.arguments.path)).toEqual(['123', 'true']);
  });

  it('leaves an unclosed call in the content and counts it', () => {
    const parsed = parseQwen3CoderTurn('<tool_call>\n<function=edit>\n<parameter=path>\nx', tools);
    expect(parsed.toolCalls).toEqual([]);
    expect(parsed.invalidToolCalls).toBe(1);
  });
});
