import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEngineSim, type EngineSim } from '../../engine-sim/index.js';
import { canonicalKey } from '../../gateway/codec/index.js';
import { lowerInput, lowerTools } from '../../gateway/protocols/openai-responses-lower.js';
import { ResponsesRequest } from '../../gateway/protocols/openai-responses-schema.js';
import type { Store } from '../../trajectory/index.js';
import { openTestSession, sessionInfo, startTestGateway, tempStore, widgetScript } from '../helpers/gateway.js';
import { testCodec, testEngineTokenizer } from '../helpers/stack.js';

const shellTool = { type: 'function', name: 'shell', description: 'Run a command.', strict: false, parameters: { type: 'object', properties: { command: { type: 'string' } }, $schema: 'http://json-schema.org/draft-07/schema#' } };
const tools = [shellTool];
const script = {
  wanderProbability: 0,
  tasks: [
    widgetScript(),
    {
      taskId: 'gadget',
      match: 'Patch the gadget',
      solve: [
        { thought: 'Patch it.', tool: { name: 'apply_patch', arguments: { input: '*** Begin Patch\n*** End Patch' } } },
        { thought: 'Look it up.', content: 'Checking.', tool: { name: 'docs.lookup', arguments: { topic: 'gadget' } } },
        { thought: 'Done.', tool: null, content: 'Patched.' },
      ],
    },
  ],
};

let engine: EngineSim;
let store: Store;
let gateway: FastifyInstance;
let url: string;

const openSession = (sessionId: string, maxTurns?: number) => openTestSession(url, sessionId, sessionInfo({ maxTurns }));

async function post(key: string, body: unknown, prefix = ''): Promise<Response> {
  return fetch(`${url}${prefix}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(prefix ? {} : { authorization: `Bearer ${key}` }) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function respond(key: string, body: object): Promise<{ status: number; json: any }> {
  const r = await post(key, body);
  return { status: r.status, json: await r.json() };
}

/** SSE events as sent: the `event:` name must be the payload's `type`. */
async function stream(key: string, body: object, prefix = ''): Promise<any[]> {
  const r = await post(key, { ...body, stream: true }, prefix);
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toContain('text/event-stream');
  const text = await r.text();
  return text
    .split('\n\n')
    .filter((block) => block.trim())
    .map((block) => {
      const lines = block.split('\n');
      const name = lines.find((l) => l.startsWith('event: '))!.slice('event: '.length);
      const data = JSON.parse(lines.find((l) => l.startsWith('data: '))!.slice('data: '.length));
      expect(data.type).toBe(name);
      return data;
    });
}

const developer = { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Sandbox: workspace-write.' }] };
const user = (text: string) => ({ type: 'message', role: 'user', content: [{ type: 'input_text', text }] });
const firstInput = [developer, user('Fix the widget please.')];
const output = (text: string, call_id: string) => ({ type: 'function_call_output', call_id, output: text });

beforeAll(async () => {
  engine = await startEngineSim({ tokenizer: await testEngineTokenizer(), script, timeScale: 0 });
  store = tempStore('gw-responses-');
  ({ gateway, url } = await startTestGateway(store, [{ name: 'e0', kind: 'vllm', url: engine.url }]));
});

afterAll(async () => {
  await gateway?.close();
  await engine?.close();
  store?.close();
});

describe('gateway: OpenAI Responses', () => {
  it('answers a function call with reasoning and exact usage, and takes the call output back on the same chain', async () => {
    const key = await openSession('r-basic');
    const t1 = await respond(key, { model: 'gpt-5-codex', instructions: 'You are Codex.', input: firstInput, tools, store: false, include: ['reasoning.encrypted_content'], reasoning: { effort: 'high' }, text: { verbosity: 'low' }, prompt_cache_key: 'x', parallel_tool_calls: false });
    expect(t1.status).toBe(200);
    expect(t1.json).toMatchObject({ object: 'response', status: 'completed', model: 'gpt-5-codex', incomplete_details: null });
    const [reasoning, call] = t1.json.output;
    expect(t1.json.output).toHaveLength(2);
    expect(reasoning).toMatchObject({ type: 'reasoning', summary: [{ type: 'summary_text', text: 'List the files first.' }] });
    expect(typeof reasoning.encrypted_content).toBe('string');
    expect(call).toMatchObject({ type: 'function_call', status: 'completed', name: 'shell', arguments: '{"command":"ls"}' });
    expect(call.call_id).toMatch(/^call_/);

    const [stored1] = (await store.loadTurns('r-basic'));
    const usage = t1.json.usage;
    expect(usage.input_tokens).toBe(stored1!.promptDelta.length);
    expect(usage.output_tokens).toBe(stored1!.sampled.length);
    expect(usage.total_tokens).toBe(usage.input_tokens + usage.output_tokens);
    expect(usage.input_tokens_details.cached_tokens).toBe(stored1!.cachedTokens);
    const codec = await testCodec();
    const thinkEnd = stored1!.sampled.indexOf(codec.tokenizer.tokenId('</think>')) + 1;
    expect(usage.output_tokens_details.reasoning_tokens).toBe(thinkEnd);
    expect(thinkEnd).toBeGreaterThan(0);

    const t2 = await respond(key, { instructions: 'You are Codex.', input: [...firstInput, ...t1.json.output, output('widget.py', call.call_id)], tools, store: false });
    expect(t2.json.output.at(-1)).toMatchObject({ type: 'function_call', arguments: '{"command":"cat widget.py"}' });
    const turns = (await store.loadTurns('r-basic'));
    expect(turns.map((t) => [t.chainIndex, t.rolledBack])).toEqual([[0, false], [0, false]]);
    expect(t2.json.usage.input_tokens).toBe(turns[0]!.promptDelta.length + turns[0]!.sampled.length + turns[1]!.promptDelta.length);
    expect(codec.tokenizer.decode(turns[1]!.promptDelta)).toBe('\n<|im_start|>user\n<tool_response>\nwidget.py\n</tool_response><|im_end|>\n<|im_start|>assistant\n');
  });

  it('streams every item from added to done, then response.completed with the full response', async () => {
    const key = await openSession('r-stream');
    const t1 = await respond(key, { input: firstInput, tools });
    const call = t1.json.output.at(-1);
    // Turn 3 has reasoning and text; turn 2 (from the stream's point of view) a call: stream both.
    const t2events = await stream(key, { input: [...firstInput, ...t1.json.output, output('widget.py', call.call_id)], tools }, `/s/${key}`);
    const t2 = t2events.at(-1).response;
    const t3events = await stream(key, { input: [...firstInput, ...t1.json.output, output('widget.py', call.call_id), ...t2.output, output('print(1)', t2.output.at(-1).call_id)], tools }, `/s/${key}`);

    for (const events of [t2events, t3events]) {
      expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
      expect(events.slice(0, 2).map((e) => e.type)).toEqual(['response.created', 'response.in_progress']);
      expect(events[0].response).toMatchObject({ status: 'in_progress', output: [] });
      const last = events.at(-1);
      expect(last.type).toBe('response.completed');
      // Items are sequential: each added item is done before the next one is added.
      const lifecycle = events.filter((e) => e.type === 'response.output_item.added' || e.type === 'response.output_item.done');
      const done = lifecycle.filter((e) => e.type === 'response.output_item.done');
      expect(lifecycle.map((e) => [e.type, e.output_index])).toEqual(done.flatMap((_, i) => [['response.output_item.added', i], ['response.output_item.done', i]]));
      expect(last.response.output).toEqual(done.map((e) => e.item));
      expect(last.response.usage.output_tokens).toBeGreaterThan(0);
      for (const [i, item] of done.map((e) => e.item).entries()) {
        const own = events.filter((e) => e.output_index === i);
        const deltas = (type: string) => own.filter((e) => e.type === type).map((e) => e.delta).join('');
        if (item.type === 'function_call') {
          expect(deltas('response.function_call_arguments.delta')).toBe(item.arguments);
          expect(own.find((e) => e.type === 'response.function_call_arguments.done').arguments).toBe(item.arguments);
        }
        if (item.type === 'message') {
          expect(deltas('response.output_text.delta')).toBe(item.content[0].text);
          expect(own.map((e) => e.type)).toEqual(expect.arrayContaining(['response.content_part.added', 'response.output_text.done', 'response.content_part.done']));
        }
        if (item.type === 'reasoning') expect(deltas('response.reasoning_summary_text.delta')).toBe(item.summary[0].text);
      }
    }
    expect(t2.output.map((i: any) => i.type)).toEqual(['reasoning', 'function_call']);
    const t3 = t3events.at(-1).response;
    expect(t3.output.map((i: any) => i.type)).toEqual(['reasoning', 'message']);
    expect(t3.output[1].content[0].text).toBe('The widget is fixed.');
    // Text is streamed as it is generated: more than one delta for the answer.
    expect(t3events.filter((e) => e.type === 'response.output_text.delta').length).toBeGreaterThan(1);
    expect((await store.loadTurns('r-stream')).map((t) => [t.chainIndex, t.rolledBack])).toEqual([[0, false], [0, false], [0, false]]);
  });

  it('keeps a Codex-style conversation (store: false, full input, echoed reasoning) on one chain', async () => {
    const key = await openSession('r-codex');
    const base = { model: 'gpt-5-codex', instructions: 'You are Codex.', tools: [...tools, { type: 'web_search' }], store: false, stream: true };
    // Codex echoes items with ids, statuses and its own content forms.
    const echo = (items: any[]) => items.map((item) => (item.type === 'message' ? { ...item, id: 'msg_x', content: item.content.map((c: any) => ({ ...c, annotations: [], logprobs: [] })) } : { ...item, id: `${item.id}_echo` }));
    let input: any[] = [developer, { role: 'user', content: 'Fix the widget please.' }];
    const outputs: string[] = ['widget.py', 'print(1)'];
    let final: any;
    for (let turn = 0; turn < 3; turn++) {
      const events = await stream(key, { ...base, input });
      final = events.at(-1).response;
      const calls = final.output.filter((i: any) => i.type === 'function_call');
      input = [...input, ...echo(final.output), ...calls.map((c: any) => output(outputs[turn]!, c.call_id))];
    }
    expect(final.output.at(-1).content[0].text).toBe('The widget is fixed.');
    expect((await store.loadTurns('r-codex')).map((t) => [t.chainIndex, t.rolledBack])).toEqual([[0, false], [0, false], [0, false]]);

    // The echoed encrypted reasoning comes back as the turn's reasoning, merged with its call.
    const body = ResponsesRequest.parse({ ...base, input });
    const lowered = lowerInput(body.instructions, body.input, lowerTools(body.tools));
    expect(lowered[0]).toEqual({ role: 'system', content: 'You are Codex.\n\nSandbox: workspace-write.' });
    expect(lowered[2]).toEqual({ role: 'assistant', content: '', reasoning_content: 'List the files first.', tool_calls: [{ name: 'shell', arguments: { command: 'ls' } }] });
    expect(lowered.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
  });

  it('continues the same chain from previous_response_id, and rejects unknown ids', async () => {
    const key = await openSession('r-previous');
    const t1 = await respond(key, { instructions: 'You are Codex.', input: 'Fix the widget please.', tools });
    const t2 = await respond(key, { instructions: 'You are Codex.', previous_response_id: t1.json.id, input: [output('widget.py', t1.json.output.at(-1).call_id)], tools });
    expect(t2.status).toBe(200);
    expect(t2.json.previous_response_id).toBe(t1.json.id);
    const t3 = await respond(key, { instructions: 'You are Codex.', previous_response_id: t2.json.id, input: [output('print(1)', t2.json.output.at(-1).call_id)], tools });
    expect(t3.json.output.at(-1).content[0].text).toBe('The widget is fixed.');
    expect((await store.loadTurns('r-previous')).map((t) => [t.chainIndex, t.rolledBack])).toEqual([[0, false], [0, false], [0, false]]);

    const unknown = await respond(key, { previous_response_id: 'resp_nope', input: 'hi' });
    expect(unknown).toMatchObject({ status: 400, json: { error: { type: 'invalid_request_error', code: 'previous_response_not_found', param: 'previous_response_id' } } });
    // store: false responses cannot be continued by id, and no session sees another's responses.
    const unstored = await respond(key, { input: 'Fix the widget please.', tools, store: false });
    expect((await respond(key, { previous_response_id: unstored.json.id, input: 'next' })).status).toBe(400);
    const other = await openSession('r-previous-other');
    expect((await respond(other, { previous_response_id: t1.json.id, input: 'next' })).json.error.code).toBe('previous_response_not_found');
  });

  it('flattens namespace tools, answers custom tools as custom_tool_call, and drops hosted tools', async () => {
    const key = await openSession('r-tools');
    const allTools = [
      shellTool,
      { type: 'custom', name: 'apply_patch', description: 'Edit files.', format: { type: 'grammar', syntax: 'lark', definition: 'start: "*** Begin Patch"' } },
      { type: 'namespace', name: 'docs', description: 'Docs server.', tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object', properties: { topic: { type: 'string' } } } }, { type: 'web_search' }] },
      { type: 'web_search', external_web_access: false },
      { type: 'tool_search' },
      { type: 'local_shell' },
      { type: 'file_search', vector_store_ids: ['vs_1'] },
      { type: 'some_future_tool', whatever: 1 },
    ];
    let input: any[] = [user('Patch the gadget.')];
    const t1 = await respond(key, { input, tools: allTools, store: false });
    expect(t1.status).toBe(200);
    const patch = t1.json.output.at(-1);
    expect(patch).toMatchObject({ type: 'custom_tool_call', name: 'apply_patch', input: '*** Begin Patch\n*** End Patch' });
    input = [...input, ...t1.json.output, { type: 'custom_tool_call_output', call_id: patch.call_id, output: 'Done!' }];
    const t2 = await respond(key, { input, tools: allTools, store: false });
    expect(t2.json.output.map((i: any) => i.type)).toEqual(['reasoning', 'message', 'function_call']);
    const lookup = t2.json.output[2];
    expect(lookup).toMatchObject({ name: 'lookup', namespace: 'docs', arguments: '{"topic":"gadget"}' });
    // A client that drops the namespace when echoing still lands on the same chain.
    const { namespace: _dropped, ...withoutNamespace } = lookup;
    input = [...input, t2.json.output[0], t2.json.output[1], withoutNamespace, output([{ type: 'input_text', text: 'Gadgets are small.' }] as any, lookup.call_id)];
    const t3 = await respond(key, { input, tools: allTools, store: false });
    expect(t3.json.output.at(-1).content[0].text).toBe('Patched.');

    const turns = (await store.loadTurns('r-tools'));
    expect(turns.map((t) => [t.chainIndex, t.rolledBack])).toEqual([[0, false], [0, false], [0, false]]);
    const prompted = JSON.parse(turns[0]!.toolsJson!).map((t: any) => t.function);
    expect(prompted.map((f: any) => f.name)).toEqual(['shell', 'apply_patch', 'docs.lookup']);
    expect(prompted[1].parameters).toEqual({ type: 'object', properties: { input: { type: 'string' } }, required: ['input'] });
    expect(prompted[1].description).toContain('start: "*** Begin Patch"');
    const codec = await testCodec();
    expect(codec.tokenizer.decode(turns[2]!.promptDelta)).toContain('Gadgets are small.');
  });

  it('answers an exhausted budget and a max_output_tokens cut as incomplete', async () => {
    const key = await openSession('r-budget', 1);
    const t1 = await respond(key, { input: firstInput, tools, max_output_tokens: 4 });
    // Cut while thinking: every sampled token is a reasoning token.
    expect(t1.json).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, usage: { output_tokens: 4, output_tokens_details: { reasoning_tokens: 4 } } });
    expect((await store.loadTurns('r-budget'))[0]!.sampled).toHaveLength(4);
    const events = await stream(key, { input: [...firstInput, ...t1.json.output, user('go on')], tools });
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.at(-1).response).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
    expect(events.at(-1).response.output[0].content[0].text).toContain('budget is exhausted');
  });

  it('rejects bad requests in the OpenAI error envelope', async () => {
    const key = await openSession('r-errors');
    const envelope = (type: string) => ({ error: { type, message: expect.any(String), param: null, code: null } });
    expect(await respond('sk-unknown', { input: 'hi' })).toMatchObject({ status: 401, json: envelope('authentication_error') });
    const s401 = await post('sk-unknown', { input: 'hi' }, '/s/sk-unknown');
    expect(s401.status).toBe(401);
    const malformed = await post(key, '{"input": ');
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject(envelope('invalid_request_error'));
    expect(await respond(key, { input: 5 })).toMatchObject({ status: 400, json: envelope('invalid_request_error') });
    const noCallId = await respond(key, { input: [{ type: 'function_call', name: 'shell', arguments: '{}' }] });
    expect(noCallId).toMatchObject({ status: 400, json: envelope('invalid_request_error') });
    expect(noCallId.json.error.message).toContain('call_id');
    expect((await respond(key, { input: [{ content: 'no role' }] })).status).toBe(400);
    const badArgs = await respond(key, { input: [user('x'), { type: 'function_call', call_id: 'c', name: 'shell', arguments: '{oops' }] });
    expect(badArgs.json.error.message).toContain('not a JSON object');
    expect((await respond(key, { input: [user('x')], tools: [{ type: 'function' }] })).status).toBe(400);
    expect((await store.loadTurns('r-errors'))).toHaveLength(0);
  });

  it('lowers the reply items to the canonical form of the reply', () => {
    const lowered = lowerInput(undefined, [
      { type: 'message', role: 'user', content: 'a' },
      { type: 'reasoning', summary: [{ type: 'summary_text', text: 'think' }] },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'I will.' }] },
      { type: 'function_call', call_id: 'c1', name: 'shell', arguments: '{"b":1,"a":2}' },
      { type: 'function_call', call_id: 'c2', name: 'shell', arguments: '{}' },
      { type: 'function_call_output', call_id: 'c1', output: 'x' },
      { type: 'function_call_output', call_id: 'c2', output: 'y' },
      { type: 'message', role: 'assistant', content: 'first' },
      { type: 'message', role: 'assistant', content: 'second' },
    ], lowerTools(undefined));
    const reply = { role: 'assistant' as const, content: 'I will.', tool_calls: [{ name: 'shell', arguments: { a: 2, b: 1 } }, { name: 'shell', arguments: {} }] };
    expect(canonicalKey(lowered[1]!)).toBe(canonicalKey(reply));
    expect(lowered.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant', 'assistant']);
  });
});
