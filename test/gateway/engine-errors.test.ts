import type { FastifyInstance } from 'fastify';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createRouter, type Router } from '../../scheduler/router.js';
import type { Store } from '../../trajectory/index.js';
import { openTestSession, sessionInfo, startTestGateway, tempStore } from '../helpers/gateway.js';
import { testCodec, testEngineTokenizer } from '../helpers/stack.js';

/**
 * How the fake engine answers its next generation: `ok` a whole answer; `no-finish` a token, then
 * the stream ends (with `[DONE]`, or by the body's end when `cut`) and no finish reason;
 * `error-event` a 200 stream holding the engine's error event; `status` an error answer.
 */
type Answer =
  | { kind: 'ok' }
  | { kind: 'no-finish'; cut?: boolean }
  | { kind: 'error-event'; event: object }
  | { kind: 'status'; status: number; body: object };

/**
 * A tiny engine on a real socket speaking vLLM's `/v1/completions` and SGLang's `/generate` wire
 * formats exactly, so the gateway's real backends, router and registry face each error case.
 */
interface FakeEngine {
  url: string;
  next: Answer;
  close(): Promise<void>;
}

let answerIds: number[];

async function startFakeEngine(): Promise<FakeEngine> {
  const engine = { next: { kind: 'ok' } as Answer } as FakeEngine;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.method === 'GET') return void res.writeHead(200, { 'content-type': 'text/plain' }).end(req.url === '/health' ? '' : '# no metrics\n');
      const answer = engine.next;
      engine.next = { kind: 'ok' };
      if (answer.kind === 'status') return void res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const send = (event: object | string) => res.write(`data: ${typeof event === 'string' ? event : JSON.stringify(event)}\n\n`);
      const sglang = req.url === '/generate';
      const ids = answer.kind === 'ok' ? answerIds : answerIds.slice(0, 1);
      if (answer.kind === 'error-event') send(answer.event);
      else if (sglang) {
        send({
          output_ids: ids,
          meta_info: {
            prompt_tokens: 10,
            completion_tokens: ids.length,
            output_token_logprobs: ids.map((id) => [-0.5, id, null]),
            finish_reason: answer.kind === 'ok' ? { type: 'stop', matched: ids.at(-1) } : null,
          },
        });
      } else {
        for (let i = 0; i < ids.length; i++) {
          const last = answer.kind === 'ok' && i === ids.length - 1;
          send({ choices: [{ index: 0, text: '', logprobs: { tokens: [`token_id:${ids[i]}`], token_logprobs: [-0.5] }, finish_reason: last ? 'stop' : null }] });
        }
        send({ choices: [], usage: { prompt_tokens: 10, completion_tokens: ids.length, total_tokens: 10 + ids.length } });
      }
      if (!(answer.kind === 'no-finish' && answer.cut)) send('[DONE]');
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  engine.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  engine.close = () => new Promise((resolve) => server.close(() => resolve()));
  return engine;
}

/** One gateway per engine, so no failover to another instance hides how a call ended. */
interface Stack {
  engine: FakeEngine;
  gateway: FastifyInstance;
  url: string;
  router: Router;
  store: Store;
}
const stacks: Partial<Record<'vl' | 'sg', Stack>> = {};
/** Instances the registries took out, in order. */
let takenOut: string[] = [];

async function startStack(name: 'vl' | 'sg'): Promise<Stack> {
  const engine = await startFakeEngine();
  const instance = { name, kind: name === 'vl' ? 'vllm' : 'sglang', url: engine.url } as const;
  const router = createRouter([instance], { policy: 'home', healthIntervalMs: 600_000, metricsIntervalMs: 600_000 });
  router.registry.onDown((down) => takenOut.push(down));
  const store = tempStore(`gw-engine-errors-${name}-`);
  const { gateway, url } = await startTestGateway(store, [instance], router);
  return { engine, gateway, url, router, store };
}

beforeAll(async () => {
  const codec = await testCodec();
  answerIds = [...(await testEngineTokenizer()).encode('Done.'), codec.encoder.endOfTurnId];
  stacks.vl = await startStack('vl');
  stacks.sg = await startStack('sg');
});

afterAll(async () => {
  for (const stack of Object.values(stacks)) {
    await stack.gateway.close();
    await stack.engine.close();
    stack.store.close();
  }
});

beforeEach(() => {
  takenOut = [];
});

let sessions = 0;
async function chat(home: 'vl' | 'sg', stream: boolean): Promise<Response> {
  const { url } = stacks[home]!;
  const key = await openTestSession(url, `s-${++sessions}`, sessionInfo({ homeInstance: home }));
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Say done.' }], stream }),
  });
}

async function respond(home: 'vl' | 'sg'): Promise<Response> {
  const { url } = stacks[home]!;
  const key = await openTestSession(url, `s-${++sessions}`, sessionInfo({ homeInstance: home }));
  return fetch(`${url}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ input: 'Say done.', stream: true }),
  });
}

/** The `data:` payloads of an SSE answer. */
async function events(r: Response): Promise<string[]> {
  return (await r.text())
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => e.slice(6));
}

/** A whole answer from `home` right after: the engine is still placed on and answers. */
async function expectServes(home: 'vl' | 'sg'): Promise<void> {
  const r = await chat(home, false);
  expect(r.status).toBe(200);
  expect((await r.json()).choices[0].message.content).toBe('Done.');
  expect(stacks[home]!.router.registry.isHealthy(home)).toBe(true);
}

describe('a vLLM stream that ends without a finish reason', () => {
  for (const cut of [false, true]) {
    const how = cut ? 'the body ends' : '[DONE] arrives';
    it(`gives a non-streaming client a 502 error answer when ${how}`, async () => {
      stacks.vl!.engine.next = { kind: 'no-finish', cut };
      const r = await chat('vl', false);
      expect(r.status).toBe(502);
      expect((await r.json()).error.message).toMatch(/without a finish reason/);
    });

    it(`gives a streaming client an error event, not a truncated answer, when ${how}`, async () => {
      stacks.vl!.engine.next = { kind: 'no-finish', cut };
      const r = await chat('vl', true);
      expect(r.status).toBe(200);
      const data = await events(r);
      expect(data).not.toContain('[DONE]');
      expect(JSON.parse(data.at(-1)!).error.message).toMatch(/without a finish reason/);
      expect(data.some((d) => JSON.parse(d).choices?.[0]?.finish_reason)).toBe(false);
    });
  }
});

describe("an engine's error for the request", () => {
  const badRequest = { message: "This model's maximum context length is 8 tokens.", type: 'BadRequestError', param: null, code: 400 };

  it('vLLM: an error event in a 200 stream gives the client its status and message, and the engine stays in', async () => {
    stacks.vl!.engine.next = { kind: 'error-event', event: { error: badRequest } };
    const r = await chat('vl', false);
    expect(r.status).toBe(400);
    expect((await r.json()).error).toMatchObject({ type: 'invalid_request_error', message: expect.stringContaining(badRequest.message) });
    expect(takenOut).toEqual([]);
    await expectServes('vl');
  });

  it('vLLM: the same error event reaches a streaming client typed as the request\'s fault, and over Responses too', async () => {
    stacks.vl!.engine.next = { kind: 'error-event', event: { error: badRequest } };
    const last = JSON.parse((await events(await chat('vl', true))).at(-1)!);
    expect(last.error).toMatchObject({ type: 'invalid_request_error', message: expect.stringContaining(badRequest.message) });
    stacks.vl!.engine.next = { kind: 'error-event', event: { error: badRequest } };
    const responseEvents = (await (await respond('vl')).text()).split('\n\n').map((e) => /^data: (.*)$/m.exec(e)?.[1]);
    const failed = responseEvents.map((d) => (d ? JSON.parse(d) : {})).find((e) => e.type === 'response.failed');
    expect(failed.response.error).toEqual({ code: 'invalid_request_error', message: expect.stringContaining(badRequest.message) });
    await expectServes('vl');
  });

  it("vLLM: an error event of the older shape (`object: 'error'`) is read the same", async () => {
    stacks.vl!.engine.next = { kind: 'error-event', event: { object: 'error', ...badRequest } };
    const r = await chat('vl', true);
    const last = JSON.parse((await events(r)).at(-1)!);
    expect(last.error.message).toContain(badRequest.message);
    expect(takenOut).toEqual([]);
    await expectServes('vl');
  });

  it('vLLM: a 404 for a wrong model name stays a 404, and the engine stays in', async () => {
    const notFound = { error: { message: 'The model `nope` does not exist.', type: 'NotFoundError', param: 'model', code: 404 } };
    stacks.vl!.engine.next = { kind: 'status', status: 404, body: notFound };
    const r = await chat('vl', false);
    expect(r.status).toBe(404);
    expect((await r.json()).error.message).toContain('does not exist');
    expect(takenOut).toEqual([]);
    await expectServes('vl');
  });

  it('vLLM: a 5xx error event is the engine failing: a 502, and the engine is taken out', async () => {
    stacks.vl!.engine.next = { kind: 'error-event', event: { error: { ...badRequest, message: 'Internal server error', type: 'InternalServerError', code: 500 } } };
    const r = await chat('vl', false);
    expect(r.status).toBe(502);
    expect((await r.json()).error.type).toBe('server_error');
    expect(takenOut).toEqual(['vl']);
    await stacks.vl!.router.registry.checkHealth('vl');
    await expectServes('vl');
  });

  it('vLLM: a 500 answer still takes the engine out', async () => {
    stacks.vl!.engine.next = { kind: 'status', status: 500, body: { error: { message: 'boom', type: 'InternalServerError', param: null, code: 500 } } };
    const r = await chat('vl', false);
    expect(r.status).toBe(502);
    expect(takenOut).toEqual(['vl']);
    await stacks.vl!.router.registry.checkHealth('vl');
    await expectServes('vl');
  });

  it("SGLang: its error event (a ValueError, the request's fault) is a 400 with its message, and the engine stays in", async () => {
    stacks.sg!.engine.next = { kind: 'error-event', event: { error: { message: 'The input (20 tokens) is longer than the model context length (8 tokens).' } } };
    const r = await chat('sg', false);
    expect(r.status).toBe(400);
    expect((await r.json()).error.message).toContain('longer than the model context length');
    expect(takenOut).toEqual([]);
    await expectServes('sg');
  });

  it('SGLang: a 404 answer stays a 404, and the engine stays in', async () => {
    stacks.sg!.engine.next = { kind: 'status', status: 404, body: { detail: 'Not Found' } };
    const r = await chat('sg', false);
    expect(r.status).toBe(404);
    expect(takenOut).toEqual([]);
    await expectServes('sg');
  });
});
