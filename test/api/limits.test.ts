import { Client } from '@temporalio/client';
import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildApiServer } from '../../api/index.js';
import { REQUEST_LIMITS } from '../../gateway/limits.js';
import { loadConfig } from '../../stack/config.js';
import { openArtifactStore, SqliteStore } from '../../trajectory/index.js';

const MAX_BODY_BYTES = 64 * 1024;
const TOKEN = 'limits-token';
const dir = () => mkdtempSync(path.join(inject('testDataRoot'), 'api-limits-'));
let app: ReturnType<typeof buildApiServer>;

beforeAll(async () => {
  const config = await loadConfig(undefined, { dataDir: dir(), 'api.maxBodyBytes': MAX_BODY_BYTES }, {});
  // A lazy client: every request here is refused before a route talks to Temporal.
  app = buildApiServer({ config, client: new Client(), store: SqliteStore.open(':memory:'), artifacts: openArtifactStore(dir()), gateway: { urls: ['http://127.0.0.1:1'], adminToken: 'a' }, token: TOKEN });
});

afterAll(async () => {
  await app?.close();
});

async function post(url: string, payload: string, contentType = 'application/json'): Promise<{ status: number; json: unknown }> {
  const r = await app.inject({ method: 'POST', url, payload, headers: { 'content-type': contentType, authorization: `Bearer ${TOKEN}` } });
  return { status: r.statusCode, json: r.json() };
}

const envelope = { error: { type: 'invalid_request', message: expect.any(String) } };

describe('limits on the batch API', () => {
  it('answers JSON nested too deep with 400 before parsing it, on every POST route', async () => {
    const deep = '['.repeat(10_000) + ']'.repeat(10_000);
    const shallow = '['.repeat(REQUEST_LIMITS.maxJsonDepth) + ']'.repeat(REQUEST_LIMITS.maxJsonDepth);
    for (const url of ['/v1/batches', '/v1/batches/b/ack', '/v1/batches/b/logprobs', '/v1/policy/pause', '/v1/policy/resume']) {
      expect(await post(url, `{"task_ids":${deep}}`), url).toEqual({ status: 400, json: envelope });
    }
    // Within the depth, the schema answers.
    expect(await post('/v1/batches', `{"task_ids":${shallow.slice(1, -1)}}`)).toMatchObject({ status: 400, json: envelope });
  });

  it('answers a body over api.maxBodyBytes with 413, and malformed or foreign bodies with 4xx', async () => {
    expect(await post('/v1/batches', JSON.stringify({ task_ids: ['x'.repeat(MAX_BODY_BYTES)] }))).toMatchObject({ status: 413, json: { error: { type: 'invalid_request' } } });
    expect(await post('/v1/batches', '{"n":')).toEqual({ status: 400, json: envelope });
    expect(await post('/v1/batches', '')).toEqual({ status: 400, json: envelope });
    expect(await post('/v1/batches', '{"__proto__":{"x":1}}')).toEqual({ status: 400, json: envelope });
    expect(await post('/v1/batches', '<a/>', 'application/xml')).toMatchObject({ status: 415, json: { error: { type: 'invalid_request' } } });
  });
});
