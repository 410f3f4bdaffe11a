import { beforeAll, describe, expect, it } from 'vitest';
import { loadCodec, type ChatMessage, type Codec, type ToolSpec } from '../../gateway/codec/index.js';

const tools: ToolSpec[] = [
  {
    type: 'function',
    function: {
      name: 'shell',
      description: 'Run a command',
      parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
    },
  },
];

let codec: Codec;
beforeAll(async () => {
  codec = await loadCodec();
});

/** Builds a chain the way the gateway does: full first render, then sampled turn + appended delta. */
async function buildChain(turns: { request: ChatMessage[]; reply: string }[], toolSpecs?: ToolSpec[]): Promise<number[]> {
  const { encoder, tokenizer } = codec;
  let tokens: number[] = [];
  for (const [i, { request, reply }] of turns.entries()) {
    tokens = i === 0 ? await encoder.encodeFirst(request, toolSpecs) : [...tokens, ...(await encoder.encodeAppended(request, toolSpecs))];
    tokens = [...tokens, ...(await tokenizer.encode(reply)), encoder.endOfTurnId];
  }
  return tokens;
}

describe('incremental encoding', () => {
  it('probes the Qwen3 generation prompt and end-of-turn token', () => {
    expect(codec.tokenizer.decode(codec.encoder.generationPrompt)).toBe('<|im_start|>assistant\n');
    expect(codec.tokenizer.decode([codec.encoder.endOfTurnId])).toBe('<|im_end|>');
  });

  it('equals the full render for a multi-turn, multi-tool, thinking transcript', async () => {
    const call1 = { name: 'shell', arguments: { command: 'ls -la' } };
    const call2 = { name: 'shell', arguments: { command: 'cat a.py' } };
    const first: ChatMessage[] = [
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'user', content: 'Fix the bug in a.py' },
    ];
    const calls =
      '<tool_call>\n{"name": "shell", "arguments": {"command": "ls -la"}}\n</tool_call>\n' +
      '<tool_call>\n{"name": "shell", "arguments": {"command": "cat a.py"}}\n</tool_call>';
    const reply1 = `<think>\nLook around first.\n</think>\n\n${calls}`;
    const toolResults: ChatMessage[] = [
      { role: 'tool', content: 'a.py\nb.py' },
      { role: 'tool', content: 'print(1)' },
    ];
    const reply2 = '<think>\nIt prints 1.\n</think>\n\nThe file prints 1.';
    const chain = await buildChain(
      [
        { request: first, reply: reply1 },
        { request: toolResults, reply: reply2 },
      ],
      tools,
    );
    const full = codec.template.render(
      [
        ...first,
        { role: 'assistant', content: '', reasoning_content: 'Look around first.', tool_calls: [call1, call2] },
        ...toolResults,
        { role: 'assistant', content: 'The file prints 1.', reasoning_content: 'It prints 1.' },
      ],
      { tools, addGenerationPrompt: false },
    );
    // The full render ends with the separator the model never samples.
    expect(codec.tokenizer.decode(chain) + '\n').toBe(full);
    expect(chain).toEqual((await codec.tokenizer.encode(full)).slice(0, -1));
  });

  it('keeps the reasoning the model saw where the template would drop it (drift is expected)', async () => {
    const first: ChatMessage[] = [{ role: 'user', content: 'hi' }];
    const reply1 = '<think>\nthinking\n</think>\n\nhello';
    const chain = await buildChain([
      { request: first, reply: reply1 },
      { request: [{ role: 'user', content: 'again' }], reply: '<think>\n\n</think>\n\nok' },
    ]);
    const text = codec.tokenizer.decode(chain);
    expect(text).toContain('<think>\nthinking\n</think>');
    const full = codec.template.render(
      [...first, { role: 'assistant', content: reply1 }, { role: 'user', content: 'again' }],
      { addGenerationPrompt: true },
    );
    expect(full).not.toContain('thinking');
  });
});
