import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startEngineSim, type EngineSim } from '../../engine-sim/index.js';
import { readSseData } from '../../gateway/backends/sse.js';
import { GatewayAdminClient } from '../../activities/gateway-admin.js';
import { SqliteStore, type Store } from '../../trajectory/index.js';
import { closeTestSession, openTestSession, sessionInfo, startTestGateway, tempStore, TEST_ADMIN_TOKEN } from '../helpers/gateway.js';
import { testCodec, testEngineTokenizer } from '../helpers/stack.js';

/** A long scripted answer (about 600 tokens of reasoning), so a pause catches it mid-way. */
const ESSAY = 'Write the essay';
const ANSWER = 'The essay is done.';
const script = {
  wanderProbability: 0,
  tasks: [
    { taskId: 'essay', match: ESSAY, solve: [{ thought: 'word '.repeat(600), tool: null, content: ANSWER }] },
    { taskId: 'note', match: 'Write a note', solve: [{ thought: 'Short.', tool: null, content: 'Noted.' }] },
  ],
};

type Kind = 'sglang' | 'vllm';
const engines: Partial<Record<Kind, EngineSim>> = {};
let store: Store;
let storeFile: string;
let gateway: FastifyInstance;
let url: string;

async function startGateway(): Promise<void> {
  ({ gateway, url } = await startTestGateway(store, [
    { name: 'sglang', kind: 'sglang', url: engines.sglang!.url },
    { name: 'vllm', kind: 'vllm', url: engines.vllm!.url },
  ]));
}

beforeAll(async () => {
  const tokenizer = await testEngineTokenizer();
  // Half real time: a 600-token answer takes seconds, long enough to pause in the middle.
  engines.sglang = await startEngineSim({ tokenizer, script, timeScale: 0.5, seed: 5 });
  engines.vllm = await startEngineSim({ tokenizer, script, timeScale: 0.5, seed: 5 });
  store = tempStore('gw-policy-');
  storeFile = (store as SqliteStore).db.name;
  await startGateway();
});

afterAll(async () => {
  await gateway?.close();
  await Promise.all(Object.values(engines).map((e) => e.close()));
  store?.close();
});

async function admin(path: string, body?: unknown, token = TEST_ADMIN_TOKEN): Promise<{ status: number; json: any }> {
  const r = await fetch(`${url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: r.status, json: await r.json() };
}

/** The trainer's weight update on one engine: a new version through the engine's own route. */
async function updateWeights(kind: Kind, version: number): Promise<void> {
  const engine = engines[kind]!;
  const r =
    kind === 'sglang'
      ? await fetch(`${engine.url}/update_weights_from_disk`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model_path: `/ckpt/v${version}`, weight_version: String(version) }),
        })
      : await fetch(`${engine.url}/update_weights`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ update_info: { weight_version: version } }),
        });
  expect(r.status).toBe(200);
}

const messages = (task: string) => [{ role: 'user', content: `${task}, please.` }];

function chat(key: string, body: object): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ max_tokens: 2000, ...body }),
  });
}

/** A streaming chat whose events are read as they come; `seen` counts the chunks so far. */
function streamChat(key: string, task: string) {
  const chunks: any[] = [];
  const done = chat(key, { messages: messages(task), stream: true }).then(async (r) => {
    expect(r.status).toBe(200);
    for await (const data of readSseData(r.body!)) if (data !== '[DONE]') chunks.push(JSON.parse(data));
  });
  return {
    chunks,
    done,
    /** Reasoning the client saw, its deltas concatenated. */
    reasoning: () => chunks.map((c) => c.choices[0]?.delta?.reasoning_content ?? '').join(''),
    /** Content the client saw, its deltas concatenated. */
    content: () => chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''),
    finishReason: () => chunks.map((c) => c.choices[0]?.finish_reason).find(Boolean),
  };
}

/** The engine's own answer for a token prompt (what the gateway's generation asked for). */
async function engineAnswer(kind: Kind, prompt: number[]): Promise<number[]> {
  const r = await fetch(`${engines[kind]!.url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt, max_tokens: 2000, return_token_ids: true }),
  });
  return ((await r.json()) as any).choices[0].token_ids;
}

/** Waits until the engine produced tokens for the call under way. */
async function generating(kind: Kind, chunks: unknown[]): Promise<void> {
  await vi.waitFor(() => expect(chunks.length).toBeGreaterThan(10), { timeout: 20_000, interval: 5 });
  expect(engines[kind]!.stats().running).toBe(1);
}

describe('gateway policy state', () => {
  it('answers the policy state behind the admin token and rejects bad pause and resume bodies', async () => {
    expect(await admin('/admin/v1/policy')).toEqual({ status: 200, json: { version: 0, paused: false } });
    expect((await admin('/admin/v1/policy', undefined, 'wrong')).status).toBe(401);
    expect((await admin('/admin/v1/policy/pause', { mode: 'later' })).status).toBe(400);
    expect((await admin('/admin/v1/policy/resume', { version: -1 })).status).toBe(400);
  });

  it('pause(finish) answers after the generation under way completed; calls made meanwhile wait and run on the new version', async () => {
    const key = await openTestSession(url, 'p-finish', sessionInfo({ homeInstance: 'sglang', taskId: 'essay' }));
    const stream = streamChat(key, ESSAY);
    await generating('sglang', stream.chunks);
    const before = engines.sglang!.stats();

    const pause = await admin('/admin/v1/policy/pause', { mode: 'finish' });
    // Answered only once the generation under way had produced its whole answer.
    expect(engines.sglang!.stats()).toMatchObject({ running: 0, requestsFinished: before.requestsFinished + 1, requestsAborted: before.requestsAborted });
    expect(pause).toEqual({ status: 200, json: { version: 0, paused: true, finished: 1, aborted: 0 } });
    await stream.done;
    expect(stream.finishReason()).toBe('stop');
    expect(await admin('/admin/v1/policy')).toMatchObject({ json: { paused: true } });

    // A new call while paused waits at the gateway: the engine never sees it before resume.
    const received = engines.sglang!.stats().requestsReceived;
    const noteKey = await openTestSession(url, 'p-finish-2', sessionInfo({ homeInstance: 'sglang', taskId: 'note' }));
    const waiting = chat(noteKey, { messages: messages('Write a note') });
    await new Promise((r) => setTimeout(r, 200));
    expect(engines.sglang!.stats().requestsReceived).toBe(received);

    await updateWeights('sglang', 1);
    expect(await admin('/admin/v1/policy/resume', { version: 1 })).toEqual({ status: 200, json: { version: 1, paused: false } });
    const answer = (await (await waiting).json()) as any;
    expect(answer.choices[0].message.content).toBe('Noted.');
    const [finished] = (await store.loadTurns('p-finish'));
    const [waited] = (await store.loadTurns('p-finish-2'));
    expect(new Set(finished!.sampledVersions)).toEqual(new Set([0]));
    expect(finished!.finishReason).toBe('stop');
    expect(new Set(waited!.sampledVersions)).toEqual(new Set([1]));
    expect(await closeTestSession(url, 'p-finish-2')).toMatchObject({ minVersion: 1, maxVersion: 1 });
  });

  it('refuses to resume on an older version than the one served', async () => {
    const r = await admin('/admin/v1/policy/resume', { version: 0 });
    expect(r.status).toBe(400);
    expect(r.json.error.message).toMatch(/older/);
    expect(await admin('/admin/v1/policy')).toMatchObject({ json: { version: 1, paused: false } });
  });

  describe.each(['sglang', 'vllm'] as const)('pause(abort) with a %s engine', (kind) => {
    it('aborts the generation, keeps its tokens and continues the same answer from them on the new version', async () => {
      const { version: from } = (await admin('/admin/v1/policy')).json as { version: number };
      const to = from + 1;
      const sessionId = `p-abort-${kind}`;
      const key = await openTestSession(url, sessionId, sessionInfo({ homeInstance: kind, taskId: 'essay' }));
      const stream = streamChat(key, ESSAY);
      await generating(kind, stream.chunks);

      const pause = await admin('/admin/v1/policy/pause', { mode: 'abort' });
      expect(pause).toEqual({ status: 200, json: { version: from, paused: true, finished: 0, aborted: 1 } });
      // The engine drops the request as the abort reaches it (SGLang's abort_request, vLLM's disconnect).
      await vi.waitFor(() => expect(engines[kind]!.stats()).toMatchObject({ running: 0 }), { timeout: 10_000, interval: 5 });
      const seenAtPause = stream.chunks.length;

      await updateWeights(kind, to);
      await admin('/admin/v1/policy/resume', { version: to });
      await stream.done;
      expect(stream.chunks.length).toBeGreaterThan(seenAtPause);

      // One uninterrupted answer for the client: the scripted turn once, neither cut nor restarted.
      expect(stream.reasoning().trim().split(/\s+/)).toEqual(Array(600).fill('word'));
      expect(stream.content().trim()).toBe(ANSWER);
      expect(stream.finishReason()).toBe('stop');

      const [turn] = (await store.loadTurns(sessionId));
      const { tokenizer } = await testCodec();
      expect(turn!.finishReason).toBe('abort_resumed');
      const cut = turn!.sampledVersions.indexOf(to);
      expect(cut).toBeGreaterThan(0);
      // Both versions, in order: the old one up to the pause, the new one after it.
      expect(turn!.sampledVersions).toEqual([...Array(cut).fill(from), ...Array(turn!.sampled.length - cut).fill(to)]);
      // The tokens are exactly the partial output followed by the engine's continuation of
      // prompt + partial output.
      const partial = turn!.sampled.slice(0, cut);
      expect((await engineAnswer(kind, turn!.promptDelta)).slice(0, cut)).toEqual(partial);
      expect(await engineAnswer(kind, [...turn!.promptDelta, ...partial])).toEqual(turn!.sampled.slice(cut));
      expect(tokenizer.decode(turn!.sampled)).toContain(ANSWER);
      expect(turn!.logprobs).toHaveLength(turn!.sampled.length);

      expect(await closeTestSession(url, sessionId)).toMatchObject({ minVersion: from, maxVersion: to });
    });
  });

  it('tags tokens with the version the engine reports when it differs from the gateway', async () => {
    const { version } = (await admin('/admin/v1/policy')).json as { version: number };
    // The trainer loaded newer weights on the engine without telling the gateway.
    await updateWeights('sglang', version + 5);
    const key = await openTestSession(url, 'p-engine-version', sessionInfo({ homeInstance: 'sglang', taskId: 'note' }));
    expect((await chat(key, { messages: messages('Write a note') })).status).toBe(200);
    expect(new Set((await store.loadTurns('p-engine-version'))[0]!.sampledVersions)).toEqual(new Set([version + 5]));
  });

  it('keeps the version and the pause across a gateway restart', async () => {
    const client = () => new GatewayAdminClient({ urls: [url], adminToken: TEST_ADMIN_TOKEN });
    expect(await client().pausePolicy('finish')).toMatchObject({ paused: true, finished: 0, aborted: 0 });
    const { version } = await client().policy();
    await gateway.close();
    store.close();
    store = SqliteStore.open(storeFile);
    await startGateway();
    expect(await client().policy()).toEqual({ version, paused: true });
    // Still paused after the restart: a call waits for the resume.
    const key = await openTestSession(url, 'p-restart', sessionInfo({ homeInstance: 'vllm', taskId: 'note' }));
    const waiting = chat(key, { messages: messages('Write a note') });
    await updateWeights('vllm', version + 1);
    expect(await client().resumePolicy(version + 1)).toEqual({ version: version + 1, paused: false });
    expect((await waiting).status).toBe(200);
    expect(new Set((await store.loadTurns('p-restart'))[0]!.sampledVersions)).toEqual(new Set([version + 1]));
    await expect(client().resumePolicy(version)).rejects.toThrow(/400/);
  });
});
