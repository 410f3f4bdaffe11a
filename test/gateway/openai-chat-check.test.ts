import { describe, expect, it } from 'vitest';
import { ChatCompletionRequest } from '../../gateway/protocols/openai-chat.js';
import { isPlainChatRequest } from '../../gateway/protocols/openai-chat-check.js';
import { exceedsJsonDepth } from '../../gateway/limits.js';
import { encode, mutateValue } from '../fuzz/mutate.js';
import { Prng } from '../fuzz/prng.js';

const SHELL = { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] };
const VALID = {
  model: 'Qwen/Qwen3-8B',
  messages: [
    { role: 'system', content: 'You fix code.' },
    { role: 'developer', content: [{ type: 'text', text: 'Be brief.' }, { type: 'text' }] },
    { role: 'user', content: [{ type: 'text', text: 'Fix the widget', cache_control: { type: 'ephemeral' } }] },
    { role: 'assistant', content: null, reasoning_content: 'Look first.', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'shell', arguments: '{"command":"ls"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: 'widget.py' },
    { role: 'assistant', content: 'Done.', reasoning_content: null, tool_calls: null, refusal: null },
    { role: 'tool', content: '' },
    { role: 'user' },
  ],
  tools: [{ type: 'function', function: { name: 'shell', description: 'Run a command.', parameters: SHELL, strict: true } }],
  tool_choice: 'auto',
  max_tokens: 16,
  max_completion_tokens: null,
  temperature: 0,
  top_p: 1,
  n: 1,
  stream: true,
  stream_options: { include_usage: true, extra: 1 },
  seed: 7,
};

/** The hand check may refuse what zod accepts, never accept what zod refuses, and accepts the body as zod returns it. */
function expectAgreement(body: unknown): { plain: boolean; zod: boolean } {
  const zod = ChatCompletionRequest.safeParse(body);
  const plain = isPlainChatRequest(body);
  if (plain) {
    expect(zod.success).toBe(true);
    expect(body).toStrictEqual(zod.data);
  }
  return { plain, zod: zod.success };
}

describe('isPlainChatRequest', () => {
  it('accepts valid requests as zod returns them', () => {
    expect(expectAgreement(VALID)).toEqual({ plain: true, zod: true });
    expect(expectAgreement({ messages: [{ role: 'user', content: 'hi' }] })).toEqual({ plain: true, zod: true });
    expect(expectAgreement(JSON.parse(JSON.stringify({ ...VALID, tools: [] })))).toEqual({ plain: true, zod: true });
  });

  it.each([
    ['no messages', { messages: [] }],
    ['messages not a list', { messages: { role: 'user' } }],
    ['an unknown role', { messages: [{ role: 'bot', content: 'x' }] }],
    ['a numeric content', { messages: [{ role: 'user', content: 1 }] }],
    ['a part without type', { messages: [{ role: 'user', content: [{ text: 'x' }] }] }],
    ['a null tool_call_id', { messages: [{ role: 'tool', content: 'x', tool_call_id: null }] }],
    ['a call of another type', { messages: [{ role: 'assistant', tool_calls: [{ type: 'custom', function: { name: 'a', arguments: '{}' } }] }] }],
    ['call arguments not text', { messages: [{ role: 'assistant', tool_calls: [{ function: { name: 'a', arguments: {} } }] }] }],
    ['call arguments nested too deep', { messages: [{ role: 'assistant', tool_calls: [{ function: { name: 'a', arguments: '['.repeat(65) + ']'.repeat(65) } }] }] }],
    ['a tool without name', { messages: [{ role: 'user' }], tools: [{ type: 'function', function: { name: '' } }] }],
    ['tool parameters as a list', { messages: [{ role: 'user' }], tools: [{ type: 'function', function: { name: 'a', parameters: [] } }] }],
    ['a name over the limit', { model: 'm'.repeat(1025), messages: [{ role: 'user' }] }],
    ['max_tokens 0', { messages: [{ role: 'user' }], max_tokens: 0 }],
    ['fractional max_tokens', { messages: [{ role: 'user' }], max_completion_tokens: 1.5 }],
    ['temperature above 2', { messages: [{ role: 'user' }], temperature: 2.01 }],
    ['top_p 0', { messages: [{ role: 'user' }], top_p: 0 }],
    ['n 2', { messages: [{ role: 'user' }], n: 2 }],
    ['stream as text', { messages: [{ role: 'user' }], stream: 'yes' }],
    ['include_usage as text', { messages: [{ role: 'user' }], stream_options: { include_usage: 'yes' } }],
    ['a list body', [{ role: 'user' }]],
  ])('refuses %s, as zod does', (_why, body) => {
    expect(expectAgreement(body)).toEqual({ plain: false, zod: false });
  });

  it('agrees with zod on thousands of mutated requests', () => {
    const rng = new Prng(14);
    const seen = { plain: 0, zodOnly: 0, refused: 0 };
    for (let i = 0; i < 3000; i++) {
      const text = encode(mutateValue(rng, VALID, { root: true }));
      // The body parser refuses deep bodies before anyone parses them.
      if (exceedsJsonDepth(text)) continue;
      const { plain, zod } = expectAgreement(JSON.parse(text));
      if (plain) seen.plain++;
      else if (zod) seen.zodOnly++;
      else seen.refused++;
    }
    // Both answers occur, so the agreement above is tested on each side.
    expect(seen.plain).toBeGreaterThan(100);
    expect(seen.refused).toBeGreaterThan(100);
  });
});
