import { fetchForSession } from '../../gateway/client/rendezvous.js';
import { createRng } from '../../engine-sim/prng.js';
import { readSseData } from '../../gateway/backends/sse.js';

/** A `shell` tool, declared in every request. */
export const TOOLS = [{ type: 'function', function: { name: 'shell', parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } } }];
export const MODEL = 'Qwen/Qwen3-8B';
/** The user message the engine's script matches: every turn answers with one `shell` call. */
export const TASK_MATCH = 'Benchmark session';
export const MAX_TOKENS = 64;

/** About 2k tokens of plausible tool output, different per session and turn so nothing dedupes. */
export function toolOutput(session: string, turn: number): string {
  const lines: string[] = [];
  for (let i = 0; i < 60; i++) lines.push(`src/module_${session}_${turn}/file_${i}.py:${i * 7}: def handler_${i}(request, ctx): return ctx.value + ${i}`);
  return lines.join('\n');
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** When each session starts and how long it thinks (its tool running) before each turn, ms. */
export interface Schedule {
  startMs: number[];
  thinkMs: number[][];
  /**
   * At most this many sessions run at once: the others wait, in order, for one to finish (their
   * `startMs` counted from then). Default all of them.
   */
  concurrency?: number;
}

/**
 * The closed loop, no think time: `concurrency` sessions at a time, `sessions` in all (default
 * `concurrency`: everyone at once). More sessions than run at once give a low-concurrency row
 * enough turns for a CPU figure: /proc counts CPU in 10 ms ticks.
 */
export function closedLoop(concurrency: number, turns: number, sessions = concurrency): Schedule {
  return {
    startMs: Array.from({ length: sessions }, () => 0),
    thinkMs: Array.from({ length: sessions }, () => Array.from({ length: turns }, () => 0)),
    concurrency,
  };
}

/** Sessions at once under `schedule`. */
export function concurrencyOf(schedule: Schedule): number {
  return Math.min(schedule.concurrency ?? Infinity, schedule.startMs.length);
}

/** Sessions arriving `ratePerSecond` apart, exponential think time of mean `meanThinkMs` before each later turn. */
export function openLoop(sessions: number, turns: number, ratePerSecond: number, meanThinkMs: number, seed = 1): Schedule {
  const next = createRng(seed);
  return {
    startMs: Array.from({ length: sessions }, (_, s) => (s * 1000) / ratePerSecond),
    thinkMs: Array.from({ length: sessions }, () => Array.from({ length: turns }, (_, t) => (t === 0 ? 0 : -Math.log(1 - next()) * meanThinkMs))),
  };
}

/** Failures by kind, counted instead of thrown so a run always finishes. */
export interface Errors {
  /** Answered with a non-2xx status (key: the status). */
  status: Record<string, number>;
  /** 200 without the expected body (no `choices`, a stream that never finished). */
  malformed: number;
  /** The request itself failed (connection refused or reset). */
  network: number;
}

export function noErrors(): Errors {
  return { status: {}, malformed: 0, network: 0 };
}

/** Counts one answer with a non-2xx status under `key` (the status, or the status with what was asked). */
export function countStatus(e: Errors, key: string | number): void {
  e.status[key] = (e.status[key] ?? 0) + 1;
}

export function errorCount(e: Errors): number {
  return Object.values(e.status).reduce((a, b) => a + b, 0) + e.malformed + e.network;
}

export function describeErrors(e: Errors): string {
  const parts = [...Object.entries(e.status).map(([s, n]) => `${n}x${s}`), ...(e.malformed ? [`${e.malformed} malformed`] : []), ...(e.network ? [`${e.network} network`] : [])];
  return parts.length === 0 ? '0' : parts.join(' ');
}

export interface PassResult {
  latenciesMs: number[];
  /** `byTurn[session][turn]`: the same latencies by turn (a turn not answered is missing), to pair paths turn by turn. */
  byTurn: number[][];
  /** From the first turn sent to the last answered. */
  seconds: number;
  turns: number;
  errors: Errors;
}

/**
 * Runs every session's turns on `schedule`; `turn` sends one and returns false when the session
 * cannot go on (its failure is already counted). Latency is measured around `turn` only.
 */
/**
 * What `path` adds to `direct`, turn by turn: the latency differences of the turns both answered.
 * Paired, so a slow moment of one pass is not set against a quiet moment of the other's tail.
 */
export function pairedDifferences(path: PassResult, direct: PassResult): number[] {
  const out: number[] = [];
  path.byTurn.forEach((turns, s) =>
    turns.forEach((ms, t) => {
      const base = direct.byTurn[s]?.[t];
      if (base !== undefined) out.push(ms - base);
    }),
  );
  return out;
}

export async function runPass(schedule: Schedule, turn: (session: number, index: number) => Promise<boolean>, errors: Errors): Promise<PassResult> {
  const latenciesMs: number[] = [];
  const byTurn: number[][] = schedule.startMs.map(() => []);
  const started = performance.now();
  let last = started;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const session = async (s: number): Promise<void> => {
    await sleep(schedule.startMs[s]!);
    for (const [t, think] of schedule.thinkMs[s]!.entries()) {
      if (think > 0) await sleep(think);
      const t0 = performance.now();
      const ok = await turn(s, t);
      last = performance.now();
      if (!ok) return;
      latenciesMs.push(last - t0);
      byTurn[s]![t] = last - t0;
    }
  };
  // Each runner takes the next session not started when its own one ends.
  let next = 0;
  const runner = async (): Promise<void> => {
    while (next < schedule.startMs.length) await session(next++);
  };
  await Promise.all(Array.from({ length: concurrencyOf(schedule) }, runner));
  return { latenciesMs, byTurn, seconds: (last - started) / 1000, turns: latenciesMs.length, errors };
}

interface ToolCallOut {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

interface ChatAnswer {
  choices?: { message?: { content?: string | null; tool_calls?: ToolCallOut[] } }[];
  usage?: { prompt_tokens?: number };
}

interface ChatChunk {
  choices?: { delta?: { content?: string | null; tool_calls?: { index: number; id?: string; function?: { name?: string; arguments?: string } }[] } }[];
  usage?: { prompt_tokens?: number } | null;
}

/**
 * A streamed answer put together as a client does: content deltas joined, each call's pieces by
 * its index. Undefined when the stream did not end with `[DONE]` or a chunk was not JSON.
 */
export async function readChatStream(body: ReadableStream<Uint8Array>): Promise<ChatAnswer | undefined> {
  let content = '';
  const calls: ToolCallOut[] = [];
  let usage: ChatAnswer['usage'];
  let done = false;
  for await (const data of readSseData(body)) {
    if (data === '[DONE]') {
      done = true;
      continue;
    }
    let chunk: ChatChunk;
    try {
      chunk = JSON.parse(data) as ChatChunk;
    } catch {
      return undefined;
    }
    if (chunk.usage) usage = chunk.usage;
    const delta = chunk.choices?.[0]?.delta;
    content += delta?.content ?? '';
    for (const piece of delta?.tool_calls ?? []) {
      const call = (calls[piece.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
      if (piece.id) call.id = piece.id;
      if (piece.function?.name) call.function.name = piece.function.name;
      call.function.arguments += piece.function?.arguments ?? '';
    }
  }
  if (!done) return undefined;
  return { choices: [{ message: { content: content || null, tool_calls: calls.length > 0 ? calls : undefined } }], usage };
}

/** The turn function for `runPass`, and the largest prompt it saw (the context the row reached). */
export interface Conversations {
  turn(session: number, turn: number): Promise<boolean>;
  maxPromptTokens(): number;
}

/** Where a chat conversation is sent: the gateway's replicas (with a session key), LiteLLM or the engine. */
export interface ChatTarget {
  urls: string[];
  /** Bearer token for a session (the gateway's session key, LiteLLM's master key); none for the engine. */
  token(session: number): string | undefined;
  /** Session id that picks the replica by rendezvous hash. */
  sessionId(session: number): string;
}

/**
 * The agent side of a conversation: system and task, then per turn the model's answer and a
 * ~2k-token tool result. With `stream` every request asks for a stream (with usage), as Claude
 * Code, Codex and OpenCode do, and the answer is put together from it. Failures are counted in `errors`.
 */
export function chatConversations(target: ChatTarget, sessions: number, label: string, errors: Errors, stream = false): Conversations {
  const histories = Array.from({ length: sessions }, (_, s): unknown[] => [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: `${TASK_MATCH} ${label}-${s}: inspect the repository.` },
  ]);
  let maxPromptTokens = 0;
  const turn = async (s: number, index: number): Promise<boolean> => {
    const messages = histories[s]!;
    const token = target.token(s);
    let body: ChatAnswer;
    try {
      const r = await fetchForSession(target.urls, target.sessionId(s), '/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify({ model: MODEL, messages, tools: TOOLS, max_tokens: MAX_TOKENS, ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}) }),
      });
      if (!r.ok) {
        await r.arrayBuffer();
        countStatus(errors, r.status);
        return false;
      }
      const answer = stream ? await readChatStream(r.body!) : ((await r.json()) as ChatAnswer);
      if (!answer) {
        errors.malformed++;
        return false;
      }
      body = answer;
    } catch {
      errors.network++;
      return false;
    }
    const message = body.choices?.[0]?.message;
    if (!message) {
      errors.malformed++;
      return false;
    }
    messages.push(
      { role: 'assistant', content: message.content ?? null, tool_calls: message.tool_calls },
      { role: 'tool', tool_call_id: message.tool_calls?.[0]?.id ?? 'call', content: toolOutput(`${label}-${s}`, index) },
    );
    maxPromptTokens = Math.max(maxPromptTokens, body.usage?.prompt_tokens ?? 0);
    return true;
  };
  return { turn, maxPromptTokens: () => maxPromptTokens };
}

/** One stored turn of a gateway chain: what the gateway appended to the prompt, what the engine sampled. */
export interface StoredTurn {
  promptDelta: ArrayLike<number>;
  sampled: ArrayLike<number>;
}

/**
 * The engine side of the gateway's conversations: each turn's token prompt, rebuilt from the
 * stored chain, sent to `/v1/completions` as the gateway's vLLM backend sends it.
 */
export function tokenReplay(engineUrl: string, storedTurns: (session: number) => Promise<StoredTurn[]>, errors: Errors): (session: number, turn: number) => Promise<boolean> {
  const chains = new Map<number, { turns: StoredTurn[]; tokens: number[] }>();
  return async (s, turn) => {
    let chain = chains.get(s);
    if (!chain) chains.set(s, (chain = { turns: await storedTurns(s), tokens: [] }));
    const stored = chain.turns[turn];
    if (!stored) return false;
    for (let i = 0; i < stored.promptDelta.length; i++) chain.tokens.push(stored.promptDelta[i]!);
    const body = JSON.stringify({ model: MODEL, prompt: chain.tokens, max_tokens: MAX_TOKENS, temperature: 1, top_p: 1, logprobs: 0, return_tokens_as_token_ids: true, skip_special_tokens: false, stream: true, stream_options: { include_usage: true } });
    for (let i = 0; i < stored.sampled.length; i++) chain.tokens.push(stored.sampled[i]!);
    try {
      const r = await fetch(`${engineUrl}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const text = await r.text();
      if (!r.ok) {
        countStatus(errors, r.status);
        return false;
      }
      if (!text.includes('data: [DONE]')) {
        errors.malformed++;
        return false;
      }
    } catch {
      errors.network++;
      return false;
    }
    return true;
  };
}
