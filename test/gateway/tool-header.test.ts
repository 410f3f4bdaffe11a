import { Template } from '@huggingface/jinja';
import { beforeAll, describe, expect, it } from 'vitest';
import { createIncrementalEncoder, type IncrementalEncoder } from '../../gateway/codec/incremental.js';
import { loadCodec, type ChatMessage, type Codec, type ToolSpec } from '../../gateway/codec/index.js';
import { defaultModelDir, loadModelFiles } from '../../gateway/codec/model-files.js';
import { separableToolHeader } from '../../gateway/codec/tool-header.js';

const shell: ToolSpec = {
  type: 'function',
  function: {
    name: 'shell',
    description: 'Run a command',
    parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
  },
};
const edit: ToolSpec = {
  type: 'function',
  function: {
    name: 'edit',
    description: 'Replace text in a file: "old" → "new"',
    parameters: { type: 'object', properties: { path: { type: 'string' }, old: { type: 'string' }, new: { type: 'string' } } },
  },
};

/** Appended turns as agents send them: tool results, calls, reasoning, mid-conversation system text. */
const APPENDED: ChatMessage[][] = [
  [{ role: 'tool', content: 'a.py\nb.py' }],
  [
    { role: 'tool', content: 'print(1)', tool_call_id: 'call_1' },
    { role: 'tool', content: '<tool_response>nested</tool_response>' },
    { role: 'tool', content: '' },
  ],
  [{ role: 'user', content: 'Now run the tests.' }],
  [
    { role: 'system', content: 'The sandbox restarted.' },
    { role: 'user', content: 'Continue.' },
  ],
  [
    { role: 'assistant', content: 'Checking.', reasoning_content: 'Look first.', tool_calls: [{ name: 'shell', arguments: { command: 'ls' } }] },
    { role: 'tool', content: 'x' },
  ],
  [
    { role: 'assistant', content: '<think>\ninline\n</think>\n\nDone.' },
    { role: 'user', content: '<tool_response>looks like a tool</tool_response>' },
  ],
  [
    {
      role: 'assistant',
      content: '',
      tool_calls: [
        { name: 'edit', arguments: { path: 'a.py', old: 'é"\\', new: '\u{1F600}' } },
        { name: 'shell', arguments: { command: 'pytest -q', nested: { deep: [1, 2.5, null, true] } } },
      ],
    },
    { role: 'tool', content: 'ok' },
    { role: 'tool', content: '2 passed' },
    { role: 'user', content: 'Thanks' },
  ],
];

let codec: Codec;
let fullRender: IncrementalEncoder;
let shippedTemplate: string;
beforeAll(async () => {
  codec = await loadCodec();
  shippedTemplate = (await loadModelFiles(defaultModelDir())).chatTemplate;
  // The same template without the header-less render: every turn renders the tool header.
  fullRender = await createIncrementalEncoder({ render: codec.template.render, endOfTurn: codec.template.endOfTurn }, codec.tokenizer);
});

describe('tool header analysis', () => {
  it('finds the shipped Qwen3 template header separable and renders turns without it', () => {
    const template = new Template(shippedTemplate);
    expect(separableToolHeader(template.parsed.body)).toBe(1);
    expect(codec.template.renderWithoutToolHeader).toBeDefined();
    const rendered = codec.template.renderWithoutToolHeader!([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true });
    expect(rendered).toBe('<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n');
  });

  it('encodes appended turns exactly as the full render does, with and without tools', async () => {
    for (const tools of [[shell], [shell, edit], [], undefined]) {
      for (const appended of APPENDED) {
        expect(await codec.encoder.encodeAppended(appended, tools)).toEqual(await fullRender.encodeAppended(appended, tools));
      }
    }
  });

  it('accepts a header after comments and one built from pure expressions and filters', () => {
    const src =
      '{# header #}{%- if tools %}{{ "T:" ~ (tools | length) }}{% for t in tools %}{{ loop.index }}{{ t.function.name | upper }}' +
      '{{ t | tojson(indent=2) }}{% endfor %}{% if messages[0].role == "system" %}{{ messages[0].content }}{% endif %}{% endif %}' +
      '{% for m in messages %}{{ m.content }}{% endfor %}';
    expect(separableToolHeader(new Template(src).parsed.body)).toBe(2);
  });

  it.each([
    ['a later statement reads tools', '{% if tools %}T{% endif %}{% for m in messages %}{% if tools %}{{ m.content }}{% endif %}{% endfor %}'],
    ['text comes before the header', 'hello{% if tools %}T{% endif %}{{ messages[0].content }}'],
    ['the header sets a variable', '{% if tools %}{% set x = 1 %}{% endif %}{{ x }}'],
    ['a set comes before the header', '{% set ns = namespace(a=1) %}{% if tools %}{% set ns.a = 2 %}{% endif %}{{ ns.a }}'],
    ['the header reads the generation prompt flag', '{% if tools and add_generation_prompt %}T{% endif %}{{ messages[0].content }}'],
    ['the header reads all messages', '{% if tools %}{{ messages | length }}{% endif %}{{ messages[0].content }}'],
    ['the header reads the second message', '{% if tools %}{{ messages[1].content }}{% endif %}{{ messages[0].content }}'],
    ['the header calls a function', '{% if tools %}{{ raise_exception("no") }}{% endif %}{{ messages[0].content }}'],
    ['the header defines a macro', '{% macro m() %}{{ tools }}{% endmacro %}{{ m() }}'],
    ['the template never reads tools', '{% for m in messages %}{{ m.content }}{% endfor %}'],
  ])('refuses a template where %s', (_why, src) => {
    expect(separableToolHeader(new Template(src).parsed.body)).toBeUndefined();
  });
});
