import { beforeAll, describe, expect, it } from 'vitest';
import { StreamSplitter } from '../../gateway/codec/stream-splitter.js';
import type { Codec } from '../../gateway/codec/index.js';
import { testCodec } from '../helpers/stack.js';

let codec: Codec;
beforeAll(async () => {
  codec = await testCodec();
});

/** Feeds a turn token by token and collects what would be streamed. */
async function stream(text: string, startsInReasoning = false) {
  const splitter = new StreamSplitter(codec.tokenizer, codec.encoder.endOfTurnId, startsInReasoning);
  let reasoning = '';
  let content = '';
  for (const id of [...(await codec.tokenizer.encode(text)), codec.encoder.endOfTurnId]) {
    const d = splitter.push([id]);
    reasoning += d.reasoning;
    content += d.content;
  }
  return { reasoning, content };
}

describe('streaming a turn as reasoning and content deltas', () => {
  it('streams reasoning, then content, and holds tool calls back', async () => {
    const out = await stream('<think>\nweigh options\n</think>\n\nChecking. ✓\n<tool_call>\n{"name": "shell", "arguments": {}}\n</tool_call>');
    expect(out.reasoning.trim()).toBe('weigh options');
    expect(out.content.trim()).toBe('Checking. ✓');
  });

  it('treats the turn as reasoning when the generation prompt opened <think>', async () => {
    const out = await stream('already thinking\n</think>\n\nanswer', true);
    expect(out.reasoning.trim()).toBe('already thinking');
    expect(out.content).toBe('answer');
  });

  it('streams a plain answer as content', async () => {
    expect(await stream('just text')).toEqual({ reasoning: '', content: 'just text' });
  });
});
