import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestSession } from '../helpers/gateway.js';
import { startScriptedStack, type ScriptedStack } from '../helpers/scripted-vllm.js';

/** The engine refuses prompt + max_tokens beyond its max_model_len: the gateway asks for no more. */
describe("gateway: the engine's max_model_len", () => {
  const maxModelLen = 60;
  let stack: ScriptedStack;

  beforeAll(async () => {
    stack = await startScriptedStack('gw-max-model-len-', undefined, { maxModelLen });
  });

  afterAll(async () => {
    await stack?.close();
  });

  it('reduces max_tokens to what is left of it after the prompt', async () => {
    const key = await openTestSession(stack.url, 's-model-len-clamp');
    stack.engine.answer(await stack.turn('Done.'));
    const sent = stack.engine.requests.length;
    const r = await stack.post('/v1/chat/completions', key, { messages: [{ role: 'user', content: 'Fix the widget' }], max_tokens: 500 });
    expect(r.status).toBe(200);
    const request = stack.engine.requests[sent]!;
    expect(request.prompt.length).toBeLessThan(maxModelLen);
    expect(request.max_tokens).toBe(maxModelLen - request.prompt.length);
  });

  it('refuses with a 400 naming it a prompt that alone fills it', async () => {
    const key = await openTestSession(stack.url, 's-model-len-full');
    const sent = stack.engine.requests.length;
    const r = await stack.post('/v1/chat/completions', key, { messages: [{ role: 'user', content: 'widget '.repeat(80) }] });
    expect(r.status).toBe(400);
    expect(r.json.error.message).toContain('max_model_len of 60');
    expect(stack.engine.requests.length).toBe(sent);
  });
});
