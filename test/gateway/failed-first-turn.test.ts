import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestSession } from '../helpers/gateway.js';
import { startScriptedStack, type ScriptedStack } from '../helpers/scripted-vllm.js';

/** A first turn the engine fails leaves no chain behind: the agent's retry is the session's first chain. */
describe('gateway: a failed first turn', () => {
  let stack: ScriptedStack;

  beforeAll(async () => {
    stack = await startScriptedStack('gw-failed-first-');
  });

  afterAll(async () => {
    await stack?.close();
  });

  it('is retried as chain 0, and a second chain after it is chain 1', async () => {
    const sessionId = 's-failed-first';
    const key = await openTestSession(stack.url, sessionId);
    const messages = [{ role: 'user', content: 'Fix the widget' }];
    stack.engine.answer({ status: 400, message: 'the engine refused it' }, await stack.turn('Done.'), await stack.turn('A title.'));
    const failed = await stack.post('/v1/chat/completions', key, { messages });
    expect(failed.status).toBe(400);
    const retried = await stack.post('/v1/chat/completions', key, { messages });
    expect(retried.status).toBe(200);
    const other = await stack.post('/v1/chat/completions', key, { messages: [{ role: 'user', content: 'Name this chat' }] });
    expect(other.status).toBe(200);
    const turns = await stack.store.loadTurns(sessionId);
    expect(turns.map((t) => [t.chainIndex, JSON.parse(t.replyJson).content])).toEqual([
      [0, 'Done.'],
      [1, 'A title.'],
    ]);
  });
});
