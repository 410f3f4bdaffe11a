import { beforeAll, describe, expect, it } from 'vitest';
import { loadCodec, type ChatMessage, type Codec, type ToolSpec } from '../../gateway/codec/index.js';
import { EXEC_COMMAND, GENERIC_SCRIPT, SCRIPT, TASK, readSse, useEngineSims } from './helpers.js';

const engines = useEngineSims(11);
let codec: Codec;
beforeAll(async () => {
  codec = await loadCodec();
});

const TOOLS: ToolSpec[] = [
  { type: 'function', function: { name: 'bash', description: 'Run a command', parameters: { type: 'object', properties: { command: { type: 'string' }, timeout: { type: 'number' } }, required: ['command'] } } },
  { type: 'function', function: { name: 'edit', description: 'Edit a file', parameters: { type: 'object', properties: { path: { type: 'string' } } } } },
];
const OPENING = [
  { role: 'system', content: 'You are a careful coding agent.' },
  { role: 'user', content: TASK },
];

interface ToolCallOut {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}
interface ChatCompletion {
  id: string;
  object: string;
  model: string;
  choices: {
    index: number;
    message: { role: string; content: string | null; reasoning_content: string | null; tool_calls: ToolCallOut[] };
    finish_reason: string;
  }[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number; prompt_tokens_details: { cached_tokens: number } };
}
interface Chunk {
  object: string;
  choices: { index: number; delta: { role?: string; content?: string; reasoning_content?: string; tool_calls?: (ToolCallOut & { index: number })[] }; finish_reason: string | null }[];
  usage?: ChatCompletion['usage'];
}

function chat(url: string, body: unknown): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

/** The codec's messages for an OpenAI conversation (what the template renders). */
function rendered(messages: unknown[]): ChatMessage[] {
  return (messages as Record<string, unknown>[]).map((m) =>
    m.role === 'assistant'
      ? {
          role: 'assistant',
          content: (m.content as string | null) ?? '',
          tool_calls: (m.tool_calls as ToolCallOut[] | undefined)?.map((c) => ({ name: c.function.name, arguments: JSON.parse(c.function.arguments) as Record<string, unknown> })),
        }
      : (m as ChatMessage),
  );
}

describe('engine-sim /v1/chat/completions', () => {
  it('runs a tool-calling conversation: calls parsed out, usage counts the rendered prompt', async () => {
    const sim = await engines.start({ script: { ...SCRIPT, wanderProbability: 0 }, chatTemplate: codec.template });
    const messages: unknown[] = [...OPENING];
    const first = await chat(sim.url, { model: 'Qwen/Qwen3-8B', messages, tools: TOOLS, max_tokens: 200 });
    expect(first.status).toBe(200);
    const a = (await first.json()) as ChatCompletion;
    expect(a.object).toBe('chat.completion');
    expect(a.id).toMatch(/^chatcmpl-/);
    const m1 = a.choices[0]!.message;
    expect(a.choices[0]!.finish_reason).toBe('tool_calls');
    expect(m1.reasoning_content).toBe('I should look at the files first.');
    expect(m1.content).toBeNull();
    expect(m1.tool_calls).toHaveLength(1);
    expect(m1.tool_calls[0]!.function.name).toBe('bash');
    expect(JSON.parse(m1.tool_calls[0]!.function.arguments)).toEqual({ command: 'ls -la', timeout: 30 });
    expect(a.usage.prompt_tokens).toBe((await codec.encoder.encodeFirst(rendered(messages), TOOLS)).length);
    expect(a.usage.total_tokens).toBe(a.usage.prompt_tokens + a.usage.completion_tokens);

    messages.push(
      { role: 'assistant', content: null, tool_calls: m1.tool_calls },
      { role: 'tool', tool_call_id: m1.tool_calls[0]!.id, content: 'calc.py\ntest_calc.py' },
    );
    const second = await chat(sim.url, { messages, tools: TOOLS, max_completion_tokens: 300 });
    expect(second.status).toBe(200);
    const b = (await second.json()) as ChatCompletion;
    const call = b.choices[0]!.message.tool_calls[0]!;
    expect(call.function.name).toBe('edit');
    expect(JSON.parse(call.function.arguments)).toMatchObject({ path: 'calc.py', old: 'a - b', new: 'a + b' });
    expect(b.usage.prompt_tokens).toBe((await codec.encoder.encodeFirst(rendered(messages), TOOLS)).length);
    // The second prompt extends the first, so the engine's prefix cache serves its leading blocks.
    expect(b.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(0);
  });

  it('streams reasoning, content and tool calls in chunk shape, with usage last', async () => {
    const sim = await engines.start({ script: { ...SCRIPT, wanderProbability: 0 }, chatTemplate: codec.template });
    const res = await chat(sim.url, { messages: OPENING, tools: TOOLS, max_tokens: 200, stream: true, stream_options: { include_usage: true } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = await readSse(res);
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1) as Chunk[];
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' });
    const deltas = chunks.flatMap((c) => c.choices.map((choice) => choice.delta));
    expect(deltas.map((d) => d.reasoning_content ?? '').join('')).toBe('I should look at the files first.\n');
    const calls = deltas.flatMap((d) => d.tool_calls ?? []);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'bash' } });
    expect(JSON.parse(calls[0]!.function.arguments)).toEqual({ command: 'ls -la', timeout: 30 });
    const finishes = chunks.flatMap((c) => c.choices.map((choice) => choice.finish_reason)).filter((f) => f !== null);
    expect(finishes).toEqual(['tool_calls']);
    const usage = chunks.at(-1)!;
    expect(usage.choices).toEqual([]);
    expect(usage.usage!.prompt_tokens).toBe((await codec.encoder.encodeFirst(rendered(OPENING), TOOLS)).length);
    expect(usage.usage!.completion_tokens).toBeGreaterThan(0);
  });

  it("maps the script's shell onto the agent's own: Codex's exec_command, Claude Code's Bash", async () => {
    const sim = await engines.start({ script: GENERIC_SCRIPT, chatTemplate: codec.template });
    const call = async (messages: unknown[], tools: unknown[]) => {
      const res = await chat(sim.url, { messages, tools, max_tokens: 200 });
      expect(res.status).toBe(200);
      const calls = ((await res.json()) as ChatCompletion).choices[0]!.message.tool_calls;
      expect(calls).toHaveLength(1);
      return { name: calls[0]!.function.name, arguments: JSON.parse(calls[0]!.function.arguments) as unknown };
    };
    // Codex: developer instructions, the environment as the first user message, the task second.
    const codex = [
      { role: 'developer', content: 'You are Codex, based on GPT-5.' },
      { role: 'user', content: '<environment_context>\n  <cwd>/work</cwd>\n  <shell>bash</shell>\n</environment_context>' },
      { role: 'user', content: TASK },
    ];
    expect(await call(codex, [EXEC_COMMAND])).toEqual({ name: 'exec_command', arguments: { cmd: 'ls -la' } });
    // Claude Code: a system reminder and the task as content blocks of one user message.
    const claude = [
      { role: 'system', content: 'You are Claude Code.' },
      { role: 'user', content: [{ type: 'text', text: '<system-reminder>\nAs you answer, use the context.\n</system-reminder>' }, { type: 'text', text: TASK }] },
    ];
    const bash = {
      type: 'function',
      function: {
        name: 'Bash',
        description: 'Executes a bash command.',
        parameters: {
          type: 'object',
          properties: { command: { type: 'string' }, timeout: { type: 'number' }, description: { type: 'string' }, run_in_background: { type: 'boolean' } },
          required: ['command'],
        },
      },
    };
    expect(await call(claude, [bash])).toEqual({ name: 'Bash', arguments: { command: 'ls -la', description: 'I should look at the files first.' } });
  });

  it('answers plain text when the turn has no tool call', async () => {
    const sim = await engines.start({ chatTemplate: codec.template });
    const res = await chat(sim.url, { messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }] });
    expect(res.status).toBe(200);
    const body = (await res.json()) as ChatCompletion;
    expect(body.choices[0]!.message).toMatchObject({ role: 'assistant', content: 'Done.', tool_calls: [] });
    expect(body.choices[0]!.finish_reason).toBe('stop');
  });

  it('answers a bad request with a 400 in the OpenAI error envelope', async () => {
    const sim = await engines.start({ chatTemplate: codec.template });
    const missing = await chat(sim.url, { model: 'Qwen/Qwen3-8B' });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ error: { type: 'BadRequestError', param: 'messages', code: 400 } });
    const badArgs = await chat(sim.url, {
      messages: [...OPENING, { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'bash', arguments: '{not json' } }] }],
    });
    expect(badArgs.status).toBe(400);
    expect(await badArgs.json()).toMatchObject({ error: { type: 'BadRequestError', message: 'messages[2].tool_calls[0].function.arguments is not a JSON object', code: 400 } });
    const otherModel = await chat(sim.url, { model: 'gpt-4o', messages: OPENING });
    expect(otherModel.status).toBe(404);
  });
});
