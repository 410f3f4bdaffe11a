import { loadJsTokenizer } from '../../gateway/codec/js-tokenizer.js';
import type { SyncTokenizer } from '../../gateway/codec/tokenizer.js';
import { afterEach, beforeAll } from 'vitest';
import {
  startEngineSim,
  type EngineSim,
  type EngineSimOptions,
  type PolicyScriptInput,
} from '../../engine-sim/index.js';

export function loadTokenizer(): Promise<SyncTokenizer> {
  return loadJsTokenizer();
}

/** The user message that `SCRIPT`'s task matches. */
export const TASK = 'Fix the failing test in calc.py';
/** The text `SCRIPT`'s first solve turn renders to. */
export const SOLVE_0 =
  '<think>\nI should look at the files first.\n</think>\n\n<tool_call>\n{"name": "bash", "arguments": {"command": "ls -la", "timeout": 30}}\n</tool_call>';

/** A tiny task: three solve turns (two tool calls, then an answer) and two wander turns. */
export const SCRIPT: PolicyScriptInput = {
  wanderProbability: 0.5,
  tasks: [
    {
      taskId: 'fix-bug',
      match: TASK,
      solve: [
        {
          thought: 'I should look at the files first.',
          tool: { name: 'bash', arguments: { command: 'ls -la', timeout: 30 } },
        },
        {
          thought: 'The bug is in add().',
          tool: {
            name: 'edit',
            arguments: { path: 'calc.py', old: 'a - b', new: 'a + b', flags: [1, 2.5, null, true] },
          },
        },
        { thought: 'Tests pass now.', tool: null, content: 'I fixed add() in calc.py.' },
      ],
      wander: [
        {
          thought: 'Maybe I should read the README.',
          tool: { name: 'bash', arguments: { command: 'cat README.md' } },
        },
        {
          thought: 'Let me check the weather instead.',
          tool: { name: 'bash', arguments: { command: 'curl wttr.in' } },
        },
      ],
    },
  ],
};

/** A task in the script's generic tools, which engine-sim maps onto the agent's own. */
export const GENERIC_SCRIPT: PolicyScriptInput = {
  wanderProbability: 0,
  tasks: [
    {
      taskId: 'generic',
      match: TASK,
      solve: [
        {
          thought: 'I should look at the files first.',
          tool: { name: 'shell', arguments: { command: 'ls -la' } },
        },
      ],
    },
  ],
};

/** Codex's unified-exec tool: the command line in `cmd`, a string. */
export const EXEC_COMMAND = {
  type: 'function',
  function: {
    name: 'exec_command',
    description:
      'Runs a command in a PTY, returning output or a session ID for ongoing interaction.',
    parameters: {
      type: 'object',
      properties: {
        cmd: { type: 'string', description: 'Shell command to execute.' },
        workdir: { type: 'string' },
        yield_time_ms: { type: 'number' },
      },
      required: ['cmd'],
      additionalProperties: false,
    },
  },
};

/** Codex's classic shell tool: an argv in `command`. */
export const CODEX_SHELL = {
  type: 'function',
  function: {
    name: 'shell',
    description: 'Runs a shell command and returns its output.',
    parameters: {
      type: 'object',
      properties: {
        command: { type: 'array', items: { type: 'string' } },
        workdir: { type: 'string' },
        timeout_ms: { type: 'number' },
      },
      required: ['command'],
      additionalProperties: false,
    },
  },
};

export const SYSTEM = 'You are a careful coding agent. '.repeat(20);

/** A first-turn ChatML prompt ending with the generation prompt, as the gateway renders it. */
export function firstPrompt(tk: SyncTokenizer, user: string, system = SYSTEM): number[] {
  return tk.encode(
    `<|im_start|>system\n${system}<|im_end|>\n<|im_start|>user\n${user}<|im_end|>\n<|im_start|>assistant\n`,
  );
}

/** The next turn's prompt: the previous prompt, the sampled ids, a tool result and the generation prompt. */
export function nextPrompt(
  tk: SyncTokenizer,
  prompt: number[],
  sampled: number[],
  toolResult: string,
): number[] {
  return [
    ...prompt,
    ...sampled,
    ...tk.encode(
      `\n<|im_start|>user\n<tool_response>\n${toolResult}\n</tool_response><|im_end|>\n<|im_start|>assistant\n`,
    ),
  ];
}

export interface Choice {
  index: number;
  text: string;
  logprobs: {
    text_offset: number[];
    token_logprobs: number[];
    tokens: string[];
    top_logprobs: Record<string, number>[];
  } | null;
  finish_reason: string | null;
  stop_reason: number | string | null;
  token_ids: number[] | null;
  prompt_token_ids: number[] | null;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

export interface Completion {
  id: string;
  object: string;
  created: number;
  model: string;
  choices: Choice[];
  usage: Usage;
}

export async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

export async function complete(url: string, body: Record<string, unknown>): Promise<Completion> {
  const res = await post(url, body);
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  return (await res.json()) as Completion;
}

/** Reads a whole SSE response: the `data:` payloads in order (`[DONE]` kept as a string). */
export async function readSse(res: Response): Promise<unknown[]> {
  const events: unknown[] = [];
  const text = await res.text();
  for (const block of text.split('\n\n')) {
    if (!block.trim()) continue;
    if (!block.startsWith('data: '))
      throw new Error(`not an SSE data event: ${JSON.stringify(block)}`);
    const data = block.slice('data: '.length);
    events.push(data === '[DONE]' ? data : JSON.parse(data));
  }
  return events;
}

/**
 * Simulated engines for one test file: the tokenizer is loaded once, and every engine started
 * with `start` is closed after each test. Engines use `SCRIPT`, time scale 0 and `seed` unless
 * the test says otherwise.
 */
export function useEngineSims(seed: number): {
  tokenizer: () => SyncTokenizer;
  start: (options?: Partial<EngineSimOptions>) => Promise<EngineSim>;
} {
  let tk: SyncTokenizer;
  const sims: EngineSim[] = [];
  beforeAll(async () => {
    tk = await loadTokenizer();
  });
  afterEach(async () => {
    // A test may have closed one itself (to kill an engine): closing again is not an error.
    await Promise.all(sims.splice(0).map((s) => s.close().catch(() => undefined)));
  });
  return {
    tokenizer: () => tk,
    async start(options = {}) {
      const sim = await startEngineSim({
        tokenizer: tk,
        script: SCRIPT,
        timeScale: 0,
        seed,
        ...options,
      });
      sims.push(sim);
      return sim;
    },
  };
}
