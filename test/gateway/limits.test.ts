import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exceedsJsonDepth, REQUEST_LIMITS } from '../../gateway/limits.js';
import { buildGateway } from '../../gateway/server.js';
import type { Store } from '../../trajectory/index.js';
import { openTestSession, sessionInfo, TEST_ADMIN_TOKEN, tempStore } from '../helpers/gateway.js';
import { testCodec } from '../helpers/stack.js';

const MAX_BODY_BYTES = 1024 * 1024;

let store: Store;
let gateway: FastifyInstance;
let url: string;
let key: string;

beforeAll(async () => {
  store = tempStore('gateway-limits-');
  // No engine answers: every request here must be refused before a model call.
  gateway = await buildGateway({
    codec: await testCodec(),
    store,
    engines: [{ name: 'e0', kind: 'vllm', url: 'http://127.0.0.1:9' }],
    modelName: 'Qwen/Qwen3-8B',
    adminToken: TEST_ADMIN_TOKEN,
    replica: { id: 'limits-gateway' },
    maxBodyBytes: MAX_BODY_BYTES,
  });
  await gateway.listen({ host: '127.0.0.1', port: 0 });
  const address = gateway.server.address();
  url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  key = await openTestSession(url, 'limits-session', sessionInfo());
});

afterAll(async () => {
  await gateway?.close();
  store?.close();
});

/** `[[[…]]]` or `{"a":{"a":…}}` nested `depth` deep, built without recursion. */
function nested(depth: number, kind: 'array' | 'object' = 'object'): string {
  return kind === 'array' ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

const user = [{ role: 'user', content: 'hi' }];
const openAiEnvelope = { error: { message: expect.any(String), type: 'invalid_request_error', param: null, code: null } };
const anthropicEnvelope = (type = 'invalid_request_error') => ({ type: 'error', error: { type, message: expect.any(String) } });

/** Each protocol route, a request body template whose tool parameters or call arguments are `deep`, and its error envelope. */
const ROUTES: { route: string; deepBody: (deep: string) => string; envelope: object; tooLarge: object }[] = [
  {
    route: '/v1/chat/completions',
    deepBody: (deep) => `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":${deep}}}]}`,
    envelope: openAiEnvelope,
    tooLarge: openAiEnvelope,
  },
  {
    route: '/v1/responses',
    deepBody: (deep) => `{"input":"hi","tools":[{"type":"function","name":"f","parameters":${deep}}]}`,
    envelope: openAiEnvelope,
    tooLarge: openAiEnvelope,
  },
  {
    route: '/v1/messages',
    deepBody: (deep) => `{"max_tokens":10,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":${deep}}]}]}`,
    envelope: anthropicEnvelope(),
    tooLarge: anthropicEnvelope('request_too_large'),
  },
  {
    route: '/v1/messages/count_tokens',
    deepBody: (deep) => `{"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":${deep}}]}`,
    envelope: anthropicEnvelope(),
    tooLarge: anthropicEnvelope('request_too_large'),
  },
];

async function post(path: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; json: unknown }> {
  const r = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers }, body });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : undefined };
}

describe('exceedsJsonDepth', () => {
  it('counts objects and arrays, not brackets inside strings', () => {
    expect(exceedsJsonDepth(nested(64), 64)).toBe(false);
    expect(exceedsJsonDepth(nested(65), 64)).toBe(true);
    expect(exceedsJsonDepth(nested(65, 'array'), 64)).toBe(true);
    expect(exceedsJsonDepth(JSON.stringify({ a: '[[[[[[', b: '\\"[[[[' }), 2)).toBe(false);
    expect(exceedsJsonDepth('{"a":"\\"","b":[[[', 2)).toBe(true);
    // Escaped backslashes before a quote: an even run closes the string, an odd one does not.
    expect(exceedsJsonDepth('{"a":"x\\\\","b":[[[', 2)).toBe(true);
    expect(exceedsJsonDepth('{"a":"x\\\\\\"[[[', 2)).toBe(false);
    expect(exceedsJsonDepth('{"":[[', 2)).toBe(true);
  });

  it('scans a megabyte of nesting without recursion', () => {
    expect(exceedsJsonDepth(nested(500_000, 'array'))).toBe(true);
  });
});

describe('limits on the protocol routes', () => {
  for (const { route, deepBody, envelope, tooLarge } of ROUTES) {
    for (const prefix of ['', '/s/sk-unknown-key']) {
      it(`${prefix}${route}: answers deeply nested JSON with 400 in its envelope`, async () => {
        for (const depth of [REQUEST_LIMITS.maxJsonDepth + 1, 10_000]) {
          for (const kind of ['object', 'array'] as const) {
            const r = await post(`${prefix}${route}`, deepBody(nested(depth, kind)));
            expect(r.status, `${depth} ${kind}`).toBe(400);
            expect(r.json).toMatchObject(envelope);
          }
        }
      });
    }

    it(`${route}: answers malformed, empty, non-JSON and too large bodies with 4xx in its envelope`, async () => {
      const cases: [string, string, Record<string, string>, number, object][] = [
        ['truncated', deepBody('{"type":"obj'), {}, 400, envelope],
        ['empty', '', {}, 400, envelope],
        ['not JSON', 'hello', { 'content-type': 'text/plain' }, 400, envelope],
        ['wrong content type', '<xml/>', { 'content-type': 'application/xml' }, 415, envelope],
        ['too large', `{"messages":[{"role":"user","content":"${'x'.repeat(MAX_BODY_BYTES)}"}]}`, {}, 413, tooLarge],
      ];
      for (const [name, body, headers, status, shape] of cases) {
        const r = await post(route, body, headers);
        expect(r.status, name).toBe(status);
        expect(r.json, name).toMatchObject(shape);
      }
    });
  }

  it('answers tool-call arguments nested too deep with 400 (Chat Completions, Responses)', async () => {
    const args = JSON.stringify(nested(10_000));
    const chat = await post(
      '/v1/chat/completions',
      `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":${args}}}]}]}`,
    );
    expect(chat).toMatchObject({ status: 400, json: openAiEnvelope });
    const responses = await post('/v1/responses', `{"input":[{"type":"function_call","call_id":"c","name":"f","arguments":${args}}]}`);
    expect(responses).toMatchObject({ status: 400, json: openAiEnvelope });
  });

  it('answers too many messages and too long names with 400', async () => {
    const many = await post('/v1/chat/completions', JSON.stringify({ messages: Array.from({ length: REQUEST_LIMITS.maxMessages + 1 }, () => user[0]) }));
    expect(many).toMatchObject({ status: 400, json: openAiEnvelope });
    const name = await post('/v1/messages', JSON.stringify({ max_tokens: 1, messages: user, tools: [{ name: 'n'.repeat(REQUEST_LIMITS.maxNameChars + 1) }] }));
    expect(name).toMatchObject({ status: 400, json: anthropicEnvelope() });
  });

  it('answers unknown routes, the admin routes and huge headers with 4xx', async () => {
    const missing = await fetch(`${url}/v2/nothing`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { type: 'invalid_request_error' } });
    const admin = await fetch(`${url}/admin/v1/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
      body: nested(10_000),
    });
    expect(admin.status).toBe(400);
    expect(await admin.json()).toMatchObject({ error: { type: 'invalid_request_error' } });
    const headers = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'x-big': 'h'.repeat(64 * 1024) }, body: '{}' });
    expect(headers.status).toBe(431);
    expect(await headers.json()).toMatchObject(openAiEnvelope);
  });

  it('stays healthy after all of it', async () => {
    expect((await fetch(`${url}/health`)).status).toBe(200);
  });
});
