import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCodec, type TokenizerKind } from '../../gateway/codec/index.js';
import { openTestSession } from '../helpers/gateway.js';
import { startScriptedStack, type ScriptedStack } from '../helpers/scripted-vllm.js';

/** A first sampled token that ends the turn: an empty assistant message, recorded like any turn. */

describe.each<TokenizerKind>(['native', 'js'])('gateway: an empty answer (%s tokenizer)', (kind) => {
  let stack: ScriptedStack;

  beforeAll(async () => {
    stack = await startScriptedStack(`gw-empty-${kind}-`, await loadCodec({ tokenizer: kind }));
  });

  afterAll(async () => {
    await stack?.close();
  });

  it('is an empty message on every protocol, streamed or not', async () => {
    const sessionId = `s-empty-${kind}`;
    const key = await openTestSession(stack.url, sessionId);
    const empty = [stack.codec.encoder.endOfTurnId];
    stack.engine.answer(empty, empty, empty, empty);
    const chat = await stack.post('/v1/chat/completions', key, { messages: [{ role: 'user', content: 'one' }] });
    expect(chat.status).toBe(200);
    expect(chat.json.choices[0].message.content).toBe('');
    expect(chat.json.choices[0].finish_reason).toBe('stop');
    const responses = await stack.post('/v1/responses', key, { input: 'two' });
    expect(responses.status).toBe(200);
    expect(responses.json.output).toMatchObject([{ type: 'message', content: [{ type: 'output_text', text: '' }] }]);
    const anthropic = await stack.post('/v1/messages', key, { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'three' }] });
    expect(anthropic.status).toBe(200);
    expect(anthropic.json.content).toEqual([{ type: 'text', text: '' }]);
    const streamed = await fetch(`${stack.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'four' }], stream: true }),
    });
    const text = await streamed.text();
    expect(text).not.toContain('"error"');
    expect(text).toContain('"finish_reason":"stop"');
    const turns = await stack.store.loadTurns(sessionId);
    expect(turns.map((t) => [t.sampled, JSON.parse(t.replyJson).content])).toEqual([
      [empty, ''],
      [empty, ''],
      [empty, ''],
      [empty, ''],
    ]);
  });
});
