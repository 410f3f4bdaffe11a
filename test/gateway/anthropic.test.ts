import type { FastifyInstance } from 'fastify';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEngineSim, type EngineSim } from '../../engine-sim/index.js';
import type { Store } from '../../trajectory/index.js';
import { closeTestSession, openTestSession, sessionInfo, startTestGateway, tempStore } from '../helpers/gateway.js';
import { testCodec, testEngineTokenizer } from '../helpers/stack.js';

const BILLING = 'x-anthropic-billing-header: cc_version=2.1.0.abc; cc_entrypoint=cli; cch=';
const tools = [
  {
    name: 'Bash',
    description: 'Run a shell command.',
    input_schema: {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: {
        command: { type: 'string' },
        timeout: { type: 'integer', maximum: 9007199254740991 },
      },
      required: ['command'],
    },
    eager_input_streaming: true,
    cache_control: { type: 'ephemeral', ttl: '1h' },
  },
  { type: 'web_search_20250305', name: 'web_search', max_uses: 5 },
];
const script = {
  wanderProbability: 0,
  tasks: [
    {
      taskId: 'gadget',
      match: 'Fix the gadget',
      solve: [
        { thought: 'List the files first.', tool: { name: 'Bash', arguments: { command: 'ls' } } },
        {
          thought: 'Read the gadget.',
          content: 'Reading it now.',
          tool: { name: 'Bash', arguments: { command: 'cat gadget.py' } },
        },
        { thought: 'Done now.', tool: null, content: 'The gadget is fixed.' },
      ],
    },
  ],
};

let engine: EngineSim;
let store: Store;
let gateway: FastifyInstance;
let url: string;

const openSession = (sessionId: string, maxTurns = 10, at = url) =>
  openTestSession(at, sessionId, sessionInfo({ maxTurns, taskId: 'gadget' }));

async function post(
  key: string,
  body: unknown,
  route = '/v1/messages',
  at = url,
): Promise<Response> {
  return fetch(`${at}${route}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': key,
      'anthropic-version': '2023-06-01',
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function messages(
  key: string,
  body: object,
  route?: string,
): Promise<{ status: number; json: any }> {
  const r = await post(key, body, route);
  return { status: r.status, json: await r.json() };
}

interface SseEvent {
  event: string;
  data: any;
}

async function streamEvents(key: string, body: object, at = url): Promise<SseEvent[]> {
  const r = await post(key, { ...body, stream: true }, '/v1/messages', at);
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toContain('text/event-stream');
  const text = await r.text();
  return text
    .split('\n\n')
    .filter((chunk) => chunk.trim() !== '')
    .map((chunk) => {
      const lines = chunk.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))!.slice('event: '.length);
      const data = JSON.parse(lines.find((l) => l.startsWith('data: '))!.slice('data: '.length));
      expect(data.type).toBe(event);
      return { event, data };
    });
}

const system = [
  { type: 'text', text: BILLING + '1111;' },
  { type: 'text', text: 'You are an agent.', cache_control: { type: 'ephemeral' } },
];
const extras = {
  metadata: { user_id: 'u' },
  thinking: { type: 'enabled', budget_tokens: 1024 },
  context_management: { edits: [] },
  output_config: { effort: 'high' },
};
const firstUser = { role: 'user', content: 'Fix the gadget please.' };
const base = { model: 'claude-sonnet-4-5', max_tokens: 512, system, tools, ...extras };

/** What Claude Code sends back for an answer: its blocks, with a cache marker moved onto the last one. */
function echo(content: any[]): object {
  return {
    role: 'assistant',
    content: content.map((b, i) =>
      i === content.length - 1 ? { ...b, cache_control: { type: 'ephemeral' } } : b,
    ),
  };
}

const toolResult = (id: string, text: string): object => ({
  role: 'user',
  content: [
    {
      type: 'tool_result',
      tool_use_id: id,
      content: [{ type: 'text', text }],
      cache_control: { type: 'ephemeral' },
    },
  ],
});

beforeAll(async () => {
  engine = await startEngineSim({ tokenizer: await testEngineTokenizer(), script, timeScale: 0 });
  store = tempStore('gw-anthropic-');
  ({ gateway, url } = await startTestGateway(store, [{ name: 'e0', kind: 'vllm', url: engine.url }]));
});

afterAll(async () => {
  await gateway?.close();
  await engine?.close();
  store?.close();
});

describe('gateway: Anthropic Messages', () => {
  it('answers with thinking and tool_use blocks and exact usage, and takes the tool result back', async () => {
    const key = await openSession('a-basic');
    const r = await messages(key, { ...base, messages: [firstUser] });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      stop_reason: 'tool_use',
      stop_sequence: null,
    });
    expect(r.json.id).toMatch(/^msg_/);
    const [thinking, call, ...rest] = r.json.content;
    expect(rest).toEqual([]);
    expect(thinking).toMatchObject({ type: 'thinking', thinking: 'List the files first.' });
    expect(typeof thinking.signature).toBe('string');
    expect(call).toMatchObject({ type: 'tool_use', name: 'Bash', input: { command: 'ls' } });
    expect(call.id).toMatch(/^toolu_/);
    const [turn] = (await store.loadTurns('a-basic'));
    const usage = r.json.usage;
    expect(usage.input_tokens + usage.cache_read_input_tokens).toBe(turn!.promptDelta.length);
    expect(usage.output_tokens).toBe(turn!.sampled.length);
    expect(usage.cache_creation_input_tokens).toBe(0);
    const codec = await testCodec();
    const prompt = codec.tokenizer.decode(turn!.promptDelta);
    // The server tool is dropped; the custom one keeps its schema as sent.
    expect(prompt).not.toContain('web_search');
    expect(prompt).toContain(
      '{"type": "function", "function": {"name": "Bash", "description": "Run a shell command.", "parameters": {"$schema"',
    );

    const r2 = await messages(key, {
      ...base,
      messages: [firstUser, echo(r.json.content), toolResult(call.id, 'gadget.py')],
    });
    expect(r2.json.stop_reason).toBe('tool_use');
    expect(r2.json.content.map((b: any) => b.type)).toEqual(['thinking', 'text', 'tool_use']);
    expect(r2.json.content[1].text).toBe('Reading it now.');
    expect(r2.json.content[2].input).toEqual({ command: 'cat gadget.py' });
  });

  it('keeps a three-turn conversation with echoed thinking, tool_use and tool_result on one chain', async () => {
    const key = await openSession('a-chain');
    const history: object[] = [firstUser];
    const answers: any[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await messages(key, { ...base, messages: history });
      expect(r.status).toBe(200);
      answers.push(r.json);
      const call = r.json.content.find((b: any) => b.type === 'tool_use');
      history.push(echo(r.json.content));
      if (call) history.push(toolResult(call.id, `output ${i}`));
    }
    expect(answers.map((a) => a.stop_reason)).toEqual(['tool_use', 'tool_use', 'end_turn']);
    expect(answers[2].content.at(-1)).toEqual({ type: 'text', text: 'The gadget is fixed.' });
    const turns = (await store.loadTurns('a-chain'));
    expect(turns.map((t) => [t.chainIndex, t.rolledBack])).toEqual([
      [0, false],
      [0, false],
      [0, false],
    ]);
    // The whole prompt is the chain so far: earlier turns are reused, never re-encoded.
    const [a, b, c] = turns;
    const usage = answers[2].usage;
    expect(usage.input_tokens + usage.cache_read_input_tokens).toBe(
      a!.promptDelta.length +
        a!.sampled.length +
        b!.promptDelta.length +
        b!.sampled.length +
        c!.promptDelta.length,
    );
  });

  it('rolls back a last turn whose user message the next request extends with a merged one', async () => {
    const key = await openSession('a-merged');
    const r1 = await messages(key, { ...base, messages: [firstUser] });
    const call = r1.json.content.find((b: any) => b.type === 'tool_use');
    const u2 = { role: 'user', content: [...(toolResult(call.id, 'gadget.py') as any).content, { type: 'text', text: 'Keep it short.' }] };
    const history = [firstUser, echo(r1.json.content), u2];
    expect((await messages(key, { ...base, messages: history })).status).toBe(200);
    // The client dropped A2 and sent U3: Anthropic merges U2 and U3 into one user turn.
    const r3 = await messages(key, { ...base, messages: [...history, { role: 'user', content: 'Also add a test.' }] });
    expect(r3.status).toBe(200);
    const turns = await store.loadTurns('a-merged');
    expect(turns.map((t) => [t.chainIndex, t.rolledBack])).toEqual([
      [0, false],
      [0, true],
      [0, false],
    ]);
    // Turn 3 prompts with turn 1's tokens and the merged user turn, rendered once.
    const [a, , c] = turns;
    const codec = await testCodec();
    expect(codec.tokenizer.decode(c!.promptDelta)).toBe(
      '\n<|im_start|>user\n<tool_response>\ngadget.py\n</tool_response><|im_end|>\n' +
        '<|im_start|>user\nKeep it short.\n\nAlso add a test.<|im_end|>\n<|im_start|>assistant\n',
    );
    expect(r3.json.usage.input_tokens + r3.json.usage.cache_read_input_tokens).toBe(
      a!.promptDelta.length + a!.sampled.length + c!.promptDelta.length,
    );
    expect(await closeTestSession(url, 'a-merged')).toMatchObject({ turns: 2, rollbacks: 1, rolledBackTokens: turns[1]!.sampled.length });
  });

  it('streams a complete, well-formed event sequence', async () => {
    const key = await openSession('a-stream');
    const events = (await streamEvents(key, { ...base, messages: [firstUser] })).filter(
      (e) => e.event !== 'ping',
    );
    expect(events[0]!.event).toBe('message_start');
    expect(events[0]!.data.message).toMatchObject({
      role: 'assistant',
      content: [],
      usage: { output_tokens: 0 },
    });
    expect(events.slice(-2).map((e) => e.event)).toEqual(['message_delta', 'message_stop']);

    // Every block: start, deltas of its own index, stop; blocks in index order, never interleaved.
    const blocks: { start: any; deltas: any[] }[] = [];
    let open: number | undefined;
    for (const { event, data } of events.slice(1, -2)) {
      if (event === 'content_block_start') {
        expect(open).toBeUndefined();
        expect(data.index).toBe(blocks.length);
        blocks.push({ start: data.content_block, deltas: [] });
        open = data.index;
      } else if (event === 'content_block_delta') {
        expect(data.index).toBe(open);
        blocks[open!]!.deltas.push(data.delta);
      } else {
        expect(event).toBe('content_block_stop');
        expect(data.index).toBe(open);
        open = undefined;
      }
    }
    expect(open).toBeUndefined();
    expect(blocks.map((b) => b.start.type)).toEqual(['thinking', 'tool_use']);
    const [thinking, call] = blocks;
    expect(
      thinking!.deltas
        .filter((d) => d.type === 'thinking_delta')
        .map((d) => d.thinking)
        .join('')
        .trim(),
    ).toBe('List the files first.');
    expect(thinking!.deltas.at(-1).type).toBe('signature_delta');
    expect(call!.start).toMatchObject({ type: 'tool_use', name: 'Bash', input: {} });
    expect(call!.deltas.every((d) => d.type === 'input_json_delta')).toBe(true);
    expect(JSON.parse(call!.deltas.map((d) => d.partial_json).join(''))).toEqual({ command: 'ls' });

    const delta = events.at(-2)!.data;
    expect(delta.delta).toEqual({ stop_reason: 'tool_use', stop_sequence: null });
    const [turn] = (await store.loadTurns('a-stream'));
    expect(delta.usage.output_tokens).toBe(turn!.sampled.length);
    expect(delta.usage.input_tokens + delta.usage.cache_read_input_tokens).toBe(
      turn!.promptDelta.length,
    );
  });

  it('continues a streamed answer echoed back on the same chain', async () => {
    const key = await openSession('a-stream-chain');
    const events = await streamEvents(key, { ...base, messages: [firstUser] });
    const content: any[] = [];
    for (const { event, data } of events) {
      if (event === 'content_block_start') content.push({ ...data.content_block });
      if (event !== 'content_block_delta') continue;
      const block = content[data.index];
      if (data.delta.type === 'thinking_delta') block.thinking += data.delta.thinking;
      if (data.delta.type === 'signature_delta') block.signature = data.delta.signature;
      if (data.delta.type === 'text_delta') block.text += data.delta.text;
      if (data.delta.type === 'input_json_delta') block.input = JSON.parse(data.delta.partial_json);
    }
    const call = content.find((b) => b.type === 'tool_use');
    const next = await streamEvents(key, {
      ...base,
      messages: [firstUser, echo(content), toolResult(call.id, 'gadget.py')],
    });
    const text = next
      .filter((e) => e.data.delta?.type === 'text_delta')
      .map((e) => e.data.delta.text)
      .join('');
    expect(text.trim()).toBe('Reading it now.');
    expect((await store.loadTurns('a-stream-chain')).map((t) => [t.chainIndex, t.rolledBack])).toEqual([
      [0, false],
      [0, false],
    ]);
  });

  it('strips the billing line so conversations share their prompt tokens', async () => {
    const keys = [await openSession('a-billing-1'), await openSession('a-billing-2')];
    for (const [i, key] of keys.entries()) {
      const billed = [{ type: 'text', text: `${BILLING}${i}${i}${i};` }, system[1]];
      expect((await messages(key, { ...base, system: billed, messages: [firstUser] })).status).toBe(
        200,
      );
    }
    const [one, two] = await Promise.all(['a-billing-1', 'a-billing-2'].map(async (s) => (await store.loadTurns(s))[0]!.promptDelta));
    expect(one).toEqual(two);
    const codec = await testCodec();
    expect(codec.tokenizer.decode(one!)).not.toContain('billing');
  });

  it('folds system messages, even the last one, into the adjacent user turn', async () => {
    const key = await openSession('a-system');
    const r = await messages(key, {
      ...base,
      messages: [firstUser, { role: 'system', content: 'Use the model you are.' }],
    });
    expect(r.status).toBe(200);
    const codec = await testCodec();
    const prompt = codec.tokenizer.decode((await store.loadTurns('a-system'))[0]!.promptDelta);
    expect(prompt).toContain(
      '<|im_start|>user\nFix the gadget please.\n\n<system-reminder>\nUse the model you are.\n</system-reminder><|im_end|>',
    );
  });

  it('treats string content and a single text block as the same message', async () => {
    const key = await openSession('a-forms');
    const r1 = await messages(key, { ...base, messages: [firstUser] });
    const call = r1.json.content.find((b: any) => b.type === 'tool_use');
    const asBlocks = {
      role: 'user',
      content: [{ type: 'text', text: firstUser.content, cache_control: { type: 'ephemeral' } }],
    };
    await messages(key, {
      ...base,
      messages: [
        asBlocks,
        echo(r1.json.content),
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: call.id, content: 'gadget.py' }],
        },
      ],
    });
    expect((await store.loadTurns('a-forms')).map((t) => [t.chainIndex, t.rolledBack])).toEqual([
      [0, false],
      [0, false],
    ]);
  });

  it('counts tokens exactly as the next call prompts the engine', async () => {
    const key = await openSession('a-count');
    const request = { ...base, messages: [firstUser] };
    const { max_tokens: _unused, ...countRequest } = request;
    const count = await messages(key, countRequest, '/v1/messages/count_tokens');
    expect(count.status).toBe(200);
    const r = await messages(key, request);
    expect(r.json.usage.input_tokens + r.json.usage.cache_read_input_tokens).toBe(
      count.json.input_tokens,
    );
    expect((await store.loadTurns('a-count'))[0]!.promptDelta).toHaveLength(count.json.input_tokens);
  });

  it('serves ?beta=true and the /s/<key> prefix', async () => {
    const key = await openSession('a-routes');
    expect(
      (await messages(key, { ...base, messages: [firstUser] }, '/v1/messages?beta=true')).status,
    ).toBe(200);
    const r = await fetch(`${url}/s/${key}/v1/messages?beta=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...base, messages: [firstUser] }),
    });
    expect(r.status).toBe(200);
    expect(((await r.json()) as any).type).toBe('message');
  });

  it('answers a structured-output request with JSON that fits the schema', async () => {
    const key = await openSession('a-title');
    const schema = {
      type: 'object',
      properties: { title: { type: 'string' } },
      required: ['title'],
      additionalProperties: false,
    };
    const request = {
      model: 'claude-haiku-4-5',
      max_tokens: 64,
      system: [{ type: 'text', text: 'Write a title for the conversation.' }],
      messages: [{ role: 'user', content: 'Summarise this chat.' }],
      output_config: { format: { type: 'json_schema', schema } },
    };
    const r = await messages(key, request);
    // The simulated model answers plain text, which is wrapped in the schema's string field.
    expect(JSON.parse(r.json.content.at(-1).text)).toEqual({ title: 'Done.' });
    const streamed = await streamEvents(key, request);
    const text = streamed
      .filter((e) => e.data.delta?.type === 'text_delta')
      .map((e) => e.data.delta.text)
      .join('');
    expect(JSON.parse(text)).toEqual({ title: 'Done.' });
    const codec = await testCodec();
    expect(codec.tokenizer.decode((await store.loadTurns('a-title'))[0]!.sampled)).toContain(
      'Done.<|im_end|>',
    );
  });

  it('answers past the turn budget with a final max_tokens message', async () => {
    const key = await openSession('a-budget', 1);
    const r1 = await messages(key, { ...base, messages: [firstUser] });
    const call = r1.json.content.find((b: any) => b.type === 'tool_use');
    const next = {
      ...base,
      messages: [firstUser, echo(r1.json.content), toolResult(call.id, 'x')],
    };
    const r2 = await messages(key, next);
    expect(r2.json).toMatchObject({
      type: 'message',
      stop_reason: 'max_tokens',
      content: [{ type: 'text' }],
    });
    expect(r2.json.content[0].text).toContain('budget is exhausted');
    const events = await streamEvents(key, next);
    expect(events.map((e) => e.event)).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(events[4]!.data.delta.stop_reason).toBe('max_tokens');
  });

  it('rejects bad requests in the Anthropic error envelope', async () => {
    const key = await openSession('a-errors');
    const envelope = (type: string) => ({
      type: 'error',
      error: { type, message: expect.any(String) },
    });
    expect(await messages('sk-unknown', { ...base, messages: [firstUser] })).toEqual({
      status: 401,
      json: envelope('authentication_error'),
    });
    expect(
      await messages('sk-unknown', { messages: [firstUser] }, '/v1/messages/count_tokens'),
    ).toEqual({ status: 401, json: envelope('authentication_error') });
    const noKey = await fetch(`${url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...base, messages: [firstUser] }),
    });
    expect(noKey.status).toBe(401);
    expect(await messages(key, { messages: [firstUser] })).toEqual({
      status: 400,
      json: envelope('invalid_request_error'),
    });
    expect(await messages(key, { ...base, messages: [] })).toEqual({
      status: 400,
      json: envelope('invalid_request_error'),
    });
    expect(
      await messages(key, {
        ...base,
        messages: [
          { role: 'user', content: [{ type: 'tool_use', id: 't', name: 'Bash', input: {} }] },
        ],
      }),
    ).toEqual({
      status: 400,
      json: envelope('invalid_request_error'),
    });
    const r = await post(key, '{"model": ');
    expect({ status: r.status, json: await r.json() }).toEqual({
      status: 400,
      json: envelope('invalid_request_error'),
    });
    expect((await store.loadTurns('a-errors'))).toEqual([]);
  });

  it('reports engine failures as retryable errors, in the stream once it started', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadEngine = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((resolve) => closed.close(resolve));
    const { gateway: broken, url: at } = await startTestGateway(store, [{ name: 'e0', kind: 'vllm', url: deadEngine }]);
    try {
      const key = await openSession('a-no-engine', 10, at);
      const r = await post(key, { ...base, messages: [firstUser] }, '/v1/messages', at);
      expect({ status: r.status, json: await r.json() }).toMatchObject({
        status: 503,
        json: { type: 'error', error: { type: 'overloaded_error' } },
      });
      const events = await streamEvents(key, { ...base, messages: [firstUser] }, at);
      expect(events.map((e) => e.event)).toEqual(['message_start', 'error']);
      expect(events[1]!.data.error.type).toBe('overloaded_error');
    } finally {
      await broken.close();
    }
  });
});
