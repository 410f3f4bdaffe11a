import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestSession } from '../helpers/gateway.js';
import { startScriptedStack, type ScriptedStack } from '../helpers/scripted-vllm.js';

/** A custom (free-form) tool call over Responses, written by the model with a key other than `input`. */

let stack: ScriptedStack;

beforeAll(async () => {
  stack = await startScriptedStack('gw-custom-tool-');
});

afterAll(async () => {
  await stack?.close();
});

const tools = [{ type: 'custom', name: 'apply_patch', description: 'Apply a patch.' }];
const input = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Patch it.' }] }];
const PATCH = '*** Begin Patch\n*** End Patch';

/** What Codex sends back of an output item (it drops ids and statuses of reasoning). */
const echoed = (item: any) => (item.type === 'reasoning' ? { type: 'reasoning', summary: item.summary, encrypted_content: item.encrypted_content } : item);

describe('gateway: a custom tool called with another key than input', () => {
  it.each([false, true])('hands the arguments as input, and the echo continues the chain (stream: %s)', async (stream) => {
    const sessionId = `s-custom-${stream}`;
    const key = await openTestSession(stack.url, sessionId);
    const sampled = `<think>\nPatch.\n</think>\n\n<tool_call>\n${JSON.stringify({ name: 'apply_patch', arguments: { patch: PATCH } })}\n</tool_call>`;
    stack.engine.answer(await stack.turn(sampled), await stack.turn('Patched.'));
    let output: any[];
    if (stream) {
      const r = await fetch(`${stack.url}/v1/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ input, tools, store: false, stream: true }),
      });
      const events = (await r.text()).split('\n\n').filter((b) => b.includes('data: ')).map((b) => JSON.parse(b.slice(b.indexOf('data: ') + 6)));
      output = events.find((e) => e.type === 'response.completed').response.output;
    } else {
      const first = await stack.post('/v1/responses', key, { input, tools, store: false });
      expect(first.status).toBe(200);
      output = first.json.output;
    }
    const item = output.find((i) => i.type === 'custom_tool_call');
    expect(JSON.parse(item.input)).toEqual({ patch: PATCH });
    const second = await stack.post('/v1/responses', key, {
      input: [...input, ...output.map(echoed), { type: 'custom_tool_call_output', call_id: item.call_id, output: 'Done!' }],
      tools,
      store: false,
    });
    expect(second.status).toBe(200);
    expect(second.json.output.at(-1).content[0].text).toBe('Patched.');
    const turns = await stack.store.loadTurns(sessionId);
    expect(turns.map((t) => t.chainIndex)).toEqual([0, 0]);
    expect(JSON.parse(turns[0]!.replyJson).tool_calls).toEqual([{ name: 'apply_patch', arguments: { input: JSON.stringify({ patch: PATCH }) } }]);
  });
});
