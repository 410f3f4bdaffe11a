import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEngineSim, type EngineSim } from '../../engine-sim/index.js';
import { readSseData } from '../../gateway/backends/sse.js';
import type { EngineInstance } from '../../gateway/server.js';
import { SqliteStore, type Store } from '../../trajectory/index.js';
import { closeTestSession, openTestSession, sessionInfo, SHELL_TOOLS, startTestGateway, tempStore, TEST_ADMIN_TOKEN, widgetScript } from '../helpers/gateway.js';
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { testEngineTokenizer } from '../helpers/stack.js';

/** Short, so a takeover after a replica dies takes about a second. */
const OWNERSHIP_TTL_MS = 1_000;
const tools = SHELL_TOOLS;
const script = {
  wanderProbability: 0,
  tasks: [
    widgetScript([
      { thought: 'Run the tests.', tool: { name: 'shell', arguments: { command: 'pytest' } } },
      { thought: 'Done now.', tool: null, content: 'The widget is fixed.' },
    ]),
    { taskId: 'note', match: 'Write a note', solve: [{ thought: 'Short.', tool: null, content: 'Noted.' }] },
    { taskId: 'essay', match: 'Write the essay', solve: [{ thought: 'word '.repeat(300), tool: null, content: 'Done.' }] },
  ],
};

let fast: EngineSim;
/** About real time: a 300-token answer takes a second or two, long enough to pause meanwhile. */
let slow: EngineSim;
let engines: EngineInstance[];
/** One SQLite file shared by both replicas. */
let storeFile: string;
let store: Store;
/** Replica A runs in its own process, so it can die abruptly; B runs in the test's. */
let a: GatewayProcess;
let b: { gateway: FastifyInstance; url: string };
const replica = (id: 'A' | 'B') => ({ id, sessionOwnershipTtlMs: OWNERSHIP_TTL_MS, policyPollMs: 100 });

async function startA(): Promise<void> {
  a = await spawnGateway({ storeFile, engines, replica: replica('A') });
}

const urlOf = (id: 'A' | 'B') => (id === 'A' ? a.url : b.url);

beforeAll(async () => {
  const tokenizer = await testEngineTokenizer();
  fast = await startEngineSim({ tokenizer, script, timeScale: 0 });
  slow = await startEngineSim({ tokenizer, script, timeScale: 1 });
  engines = [
    { name: 'e0', kind: 'vllm', url: fast.url },
    { name: 'slow', kind: 'vllm', url: slow.url },
  ];
  store = tempStore('gw-replicas-');
  storeFile = (store as SqliteStore).db.name;
  await startA();
  b = await startTestGateway(SqliteStore.open(storeFile), engines, undefined, replica('B'));
});

afterAll(async () => {
  await a?.kill();
  await b?.gateway.close();
  await fast?.close();
  await slow?.close();
  await store?.close();
});

async function chat(url: string, key: string, body: object): Promise<{ status: number; json: any }> {
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
  return { status: r.status, json: await r.json() };
}

async function admin(url: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const r = await fetch(`${url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: r.status, json: await r.json() };
}

/** One agent conversation: each call resends the whole history and appends the answer and tool results. */
class Conversation {
  readonly messages: object[] = [
    { role: 'system', content: 'You are an agent.' },
    { role: 'user', content: 'Fix the widget please.' },
  ];
  constructor(readonly key: string) {}
  async turn(url: string): Promise<{ status: number; json: any }> {
    const r = await chat(url, this.key, { messages: this.messages, tools });
    if (r.status !== 200) return r;
    const message = r.json.choices[0].message;
    this.messages.push(message);
    for (const call of message.tool_calls ?? []) this.messages.push({ role: 'tool', tool_call_id: call.id, content: 'ok' });
    return r;
  }
}

describe('gateway replicas on one store', () => {
  it('serves a session opened on A from B by forwarding to its owner, streaming included', async () => {
    const c = new Conversation(await openTestSession(urlOf('A'), 'r-forward'));
    expect((await c.turn(urlOf('A'))).status).toBe(200);
    const second = await c.turn(urlOf('B'));
    expect(second.status, JSON.stringify(second.json)).toBe(200);
    // Streamed through B: the SSE events pass as A wrote them.
    const r = await fetch(`${urlOf('B')}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${c.key}` },
      body: JSON.stringify({ messages: c.messages, tools, stream: true }),
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/text\/event-stream/);
    const events: string[] = [];
    for await (const data of readSseData(r.body!)) events.push(data);
    expect(events.at(-1)).toBe('[DONE]');
    const session = await store.getSession('r-forward');
    expect(session?.owner).toBe('A');
    expect((await store.loadTurns('r-forward')).map((t) => [t.chainIndex, t.seq])).toEqual([
      [0, 0],
      [0, 1],
      [0, 2],
    ]);
    // A close sent to B is closed by the owner, whose copy is the one that served.
    expect(await closeTestSession(urlOf('B'), 'r-forward')).toMatchObject({ turns: 3, chains: 1 });
  });

  it('passes a client that leaves through the forward: the owner aborts its generation on the engine', async () => {
    const key = await openTestSession(urlOf('A'), 'r-leave', sessionInfo({ homeInstance: 'slow', taskId: 'essay' }));
    const note = await chat(urlOf('A'), key, { messages: [{ role: 'user', content: 'Write a note, please.' }] });
    expect(note.status).toBe(200);
    const aborted = slow.stats().requestsAborted;
    const client = new AbortController();
    const r = await fetch(`${urlOf('B')}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Write the essay, please.' }], max_tokens: 1000, stream: true }),
      signal: client.signal,
    });
    expect(r.status).toBe(200);
    // The first tokens came from A's engine through B; then the client goes away.
    await r.body!.getReader().read();
    client.abort();
    await expect.poll(() => slow.stats().requestsAborted).toBe(aborted + 1);
    expect((await store.loadTurns('r-leave')).map((t) => t.chainIndex)).toEqual([0]);
  });

  it('takes a session over when its owner dies and continues the same chain token-exactly', async () => {
    const c = new Conversation(await openTestSession(urlOf('A'), 'r-takeover'));
    expect((await c.turn(urlOf('A'))).status).toBe(200);
    expect((await c.turn(urlOf('B'))).status).toBe(200);
    await a.kill();
    const started = Date.now();
    const third = await c.turn(urlOf('B'));
    expect(third.status, JSON.stringify(third.json)).toBe(200);
    // B waited for A's claim to lapse, no longer than the TTL and the takeover margin.
    expect(Date.now() - started).toBeLessThan(OWNERSHIP_TTL_MS + 3_000);
    expect((await store.getSession('r-takeover'))?.owner).toBe('B');
    const turns = await store.loadTurns('r-takeover');
    expect(turns.map((t) => [t.chainIndex, t.seq, t.rolledBack])).toEqual([
      [0, 0, false],
      [0, 1, false],
      [0, 2, false],
    ]);
    // The prompt B sent is A's stored tokens plus only the new messages: no re-render, no new chain.
    const [t0, t1, t2] = turns as [(typeof turns)[0], (typeof turns)[0], (typeof turns)[0]];
    expect(third.json.usage.prompt_tokens).toBe(t0.promptDelta.length + t0.sampled.length + t1.promptDelta.length + t1.sampled.length + t2.promptDelta.length);
    // A back under its own id owns nothing it lost; the session stays B's and is served through it.
    await startA();
    expect((await c.turn(urlOf('A'))).status).toBe(200);
    expect((await store.getSession('r-takeover'))?.owner).toBe('B');
  });

  it('fences a stale owner: its commit is refused, it answers 503, and no turn is written', async () => {
    const c = new Conversation(await openTestSession(urlOf('A'), 'r-fence'));
    expect((await c.turn(urlOf('A'))).status).toBe(200);
    // B takes the session while A still has it cached (A stalled past its TTL, as far as the store knows).
    expect(await store.claimSession('r-fence', 'B', OWNERSHIP_TTL_MS, Date.now() + 60 * OWNERSHIP_TTL_MS)).toBe(true);
    const stale = await c.turn(urlOf('A'));
    expect(stale.status).toBe(503);
    expect(stale.json.error).toMatchObject({ type: 'server_error' });
    expect(stale.json.error.message).toMatch(/retry/);
    expect(await store.loadTurns('r-fence')).toHaveLength(1);
    // The retry finds the session gone from A's memory and owned by B: forwarded, served from the store.
    const retry = await c.turn(urlOf('A'));
    expect(retry.status, JSON.stringify(retry.json)).toBe(200);
    expect((await store.loadTurns('r-fence')).map((t) => [t.chainIndex, t.seq])).toEqual([
      [0, 0],
      [0, 1],
    ]);
  });

  it('pauses every replica from one, answers when none generates, and refuses an older version on resume', async () => {
    const { version } = (await admin(urlOf('A'), '/admin/v1/policy')).json as { version: number };
    // A generation under way on B when A is asked to pause: the pause answers once it finished.
    const busy = await openTestSession(urlOf('B'), 'r-busy', sessionInfo({ homeInstance: 'slow', taskId: 'essay' }));
    const running = chat(urlOf('B'), busy, { messages: [{ role: 'user', content: 'Write the essay, please.' }], max_tokens: 1000 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const pause = await admin(urlOf('A'), '/admin/v1/policy/pause', { mode: 'finish' });
    expect(pause.json).toMatchObject({ version, paused: true, finished: 1, aborted: 0 });
    expect((await running).status).toBe(200);
    expect((await admin(urlOf('B'), '/admin/v1/policy')).json).toEqual({ version, paused: true });

    // A call on B waits while paused.
    const key = await openTestSession(urlOf('B'), 'r-held', sessionInfo({ taskId: 'note' }));
    let answered = false;
    const held = chat(urlOf('B'), key, { messages: [{ role: 'user', content: 'Write a note, please.' }] }).then((r) => ((answered = true), r));
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(answered).toBe(false);

    expect((await admin(urlOf('B'), '/admin/v1/policy/resume', { version: version + 1 })).json).toEqual({ version: version + 1, paused: false });
    expect((await held).status).toBe(200);
    expect(new Set((await store.loadTurns('r-held'))[0]!.sampledVersions)).toEqual(new Set([version + 1]));
    expect((await admin(urlOf('A'), '/admin/v1/policy')).json).toEqual({ version: version + 1, paused: false });
    // Versions never go back, whichever replica is asked.
    expect((await admin(urlOf('B'), '/admin/v1/policy/resume', { version })).status).toBe(400);
    expect((await admin(urlOf('A'), '/admin/v1/policy/resume', { version })).status).toBe(400);
  });

  it('follows a pause written by a replica it never heard from, by polling the store', async () => {
    const { version } = (await admin(urlOf('B'), '/admin/v1/policy')).json as { version: number };
    await store.pausePolicy();
    await expect.poll(async () => (await admin(urlOf('B'), '/admin/v1/policy')).json).toEqual({ version, paused: true });
    await store.resumePolicy(version + 1);
    await expect.poll(async () => (await admin(urlOf('B'), '/admin/v1/policy')).json).toEqual({ version: version + 1, paused: false });
  });
});
