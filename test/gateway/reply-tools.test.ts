import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestSession } from '../helpers/gateway.js';
import { startScriptedStack, type ScriptedStack } from '../helpers/scripted-vllm.js';

/**
 * The sampled reply as the request's tool options allow it (no tools, `tool_choice`, parallel
 * calls), the client's echo of it continuing the chain, and the options that cannot be honoured.
 */

let stack: ScriptedStack;

beforeAll(async () => {
  stack = await startScriptedStack('gw-reply-tools-');
});

afterAll(async () => {
  await stack?.close();
});

const call = (name: string, args: object) => `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;
const user = (content: string) => ({ role: 'user', content });
const PARAMETERS = { type: 'object', properties: { cmd: { type: 'string' } } };
const TOOLS = [{ type: 'function', function: { name: 'exec_command', parameters: PARAMETERS } }];
const chainsOf = async (sessionId: string) => (await stack.store.loadTurns(sessionId)).map((t) => t.chainIndex);

describe('gateway: tool calls the request does not allow', () => {
  it('answers a call sampled without declared tools as text, and the echo continues the chain', async () => {
    const key = await openTestSession(stack.url, 's-no-tools');
    const sampled = `<think>\nCompact.\n</think>\n\nSummary. ${call('exec_command', { cmd: 'ls' })}`;
    stack.engine.answer(await stack.turn(sampled), await stack.turn('Fine.'));
    const first = await stack.post('/v1/chat/completions', key, { messages: [user('Summarise.')], tools: [] });
    expect(first.status).toBe(200);
    const message = first.json.choices[0].message;
    expect(message.tool_calls ?? []).toEqual([]);
    expect(message.content).toBe(`Summary. ${call('exec_command', { cmd: 'ls' })}`);
    expect(first.json.choices[0].finish_reason).toBe('stop');
    const second = await stack.post('/v1/chat/completions', key, {
      messages: [user('Summarise.'), { role: 'assistant', content: message.content, reasoning_content: message.reasoning_content }, user('Go on.')],
    });
    expect(second.status).toBe(200);
    expect(await chainsOf('s-no-tools')).toEqual([0, 0]);
    const [turn] = await stack.store.loadTurns('s-no-tools');
    expect(turn!.finishReason).toBe('stop');
  });

  it('streams the call text as content when no tools are declared', async () => {
    const key = await openTestSession(stack.url, 's-no-tools-stream');
    stack.engine.answer(await stack.turn(`Summary. ${call('exec_command', { cmd: 'ls' })}`));
    const r = await fetch(`${stack.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ messages: [user('Summarise.')], stream: true }),
    });
    const chunks = (await r.text())
      .split('\n\n')
      .filter((b) => b.startsWith('data: {'))
      .map((b) => JSON.parse(b.slice('data: '.length)));
    const content = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
    expect(content).toBe(`Summary. ${call('exec_command', { cmd: 'ls' })}`);
    expect(chunks.some((c) => c.choices[0]?.delta?.tool_calls)).toBe(false);
  });

  it("answers calls as text under tool_choice 'none', over every protocol", async () => {
    const key = await openTestSession(stack.url, 's-choice-none');
    const sampled = `<think>\nNo.\n</think>\n\n${call('exec_command', { cmd: 'ls' })}`;
    stack.engine.answer(await stack.turn(sampled), await stack.turn(sampled), await stack.turn(sampled));
    const chat = await stack.post('/v1/chat/completions', key, { messages: [user('One.')], tools: TOOLS, tool_choice: 'none' });
    expect(chat.json.choices[0].message.tool_calls ?? []).toEqual([]);
    expect(chat.json.choices[0].message.content).toBe(call('exec_command', { cmd: 'ls' }));
    const responses = await stack.post('/v1/responses', key, {
      input: 'Two.',
      tools: [{ type: 'function', name: 'exec_command', parameters: PARAMETERS }],
      tool_choice: 'none',
    });
    expect(responses.json.output.map((i: any) => i.type)).toEqual(['reasoning', 'message']);
    expect(responses.json.output[1].content[0].text).toBe(call('exec_command', { cmd: 'ls' }));
    const anthropic = await stack.post('/v1/messages', key, {
      model: 'm',
      max_tokens: 100,
      messages: [user('Three.')],
      tools: [{ name: 'exec_command', input_schema: PARAMETERS }],
      tool_choice: { type: 'none' },
    });
    expect(anthropic.json.content.map((b: any) => b.type)).toEqual(['thinking', 'text']);
    expect(anthropic.json.stop_reason).toBe('end_turn');
  });

  it('answers only the first call when parallel calls are off, and the echo continues the chain', async () => {
    const key = await openTestSession(stack.url, 's-one-call');
    const sampled = `<think>\nTwo.\n</think>\n\n${call('exec_command', { cmd: 'ls' })}\n${call('exec_command', { cmd: 'pwd' })}`;
    stack.engine.answer(await stack.turn(sampled), await stack.turn('Listed.'), await stack.turn(sampled));
    const first = await stack.post('/v1/chat/completions', key, { messages: [user('List.')], tools: TOOLS, parallel_tool_calls: false });
    const message = first.json.choices[0].message;
    expect(message.tool_calls.map((c: any) => JSON.parse(c.function.arguments))).toEqual([{ cmd: 'ls' }]);
    const second = await stack.post('/v1/chat/completions', key, {
      messages: [user('List.'), message, { role: 'tool', tool_call_id: message.tool_calls[0].id, content: 'a.txt' }],
      tools: TOOLS,
      parallel_tool_calls: false,
    });
    expect(second.status).toBe(200);
    expect(await chainsOf('s-one-call')).toEqual([0, 0]);
    const anthropic = await stack.post('/v1/messages', key, {
      model: 'm',
      max_tokens: 100,
      messages: [user('Other.')],
      tools: [{ name: 'exec_command', input_schema: PARAMETERS }],
      tool_choice: { type: 'auto', disable_parallel_tool_use: true },
    });
    expect(anthropic.json.content.filter((b: any) => b.type === 'tool_use').map((b: any) => b.input)).toEqual([{ cmd: 'ls' }]);
  });

  it('answers a forced tool as auto, naming tool_choice as ignored, on every protocol', async () => {
    const key = await openTestSession(stack.url, 's-forced');
    stack.engine.answer(await stack.turn('A.'), await stack.turn('B.'), await stack.turn('C.'));
    const chat = await stack.post('/v1/chat/completions', key, { messages: [user('x')], tools: TOOLS, tool_choice: { type: 'function', function: { name: 'exec_command' } } });
    expect(chat.status).toBe(200);
    expect(chat.headers.get('x-rollout-ignored')).toBe('tool_choice');
    const responses = await stack.post('/v1/responses', key, { input: 'y', tools: [{ type: 'function', name: 'exec_command' }], tool_choice: 'required' });
    expect(responses.status).toBe(200);
    expect(responses.headers.get('x-rollout-ignored')).toBe('tool_choice');
    const anthropic = await stack.post('/v1/messages', key, {
      model: 'm',
      max_tokens: 10,
      messages: [user('z')],
      tools: [{ name: 'exec_command', input_schema: PARAMETERS }],
      tool_choice: { type: 'tool', name: 'exec_command' },
    });
    expect(anthropic.status).toBe(200);
    expect(anthropic.headers.get('x-rollout-ignored')).toBe('tool_choice');
    const auto = await stack.post('/v1/chat/completions', key, { messages: [user('w')], tools: TOOLS, tool_choice: 'auto' });
    expect(auto.headers.get('x-rollout-ignored')).toBeNull();
  });

  it('names the reasoning options it ignores in a response header', async () => {
    const key = await openTestSession(stack.url, 's-effort');
    stack.engine.answer(await stack.turn('A.'), await stack.turn('B.'), await stack.turn('C.'), await stack.turn('D.'));
    const chat = await stack.post('/v1/chat/completions', key, { messages: [user('x')], reasoning_effort: 'high' });
    expect(chat.status).toBe(200);
    expect(chat.headers.get('x-rollout-ignored')).toBe('reasoning_effort');
    const responses = await stack.post('/v1/responses', key, { input: 'y', reasoning: { effort: 'low', summary: 'auto' } });
    expect(responses.headers.get('x-rollout-ignored')).toBe('reasoning.effort');
    const anthropic = await stack.post('/v1/messages', key, { model: 'm', max_tokens: 2000, messages: [user('z')], thinking: { type: 'enabled', budget_tokens: 1024 } });
    expect(anthropic.headers.get('x-rollout-ignored')).toBe('thinking.budget_tokens');
    const plain = await stack.post('/v1/chat/completions', key, { messages: [user('w')] });
    expect(plain.status).toBe(200);
    expect(plain.headers.get('x-rollout-ignored')).toBeNull();
  });
});
