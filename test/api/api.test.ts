import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchManifest, FinishedGroup, FinishedGroupsAnswer } from '../../activities/types.js';
import { gatewayAdminToken } from '../../stack/secrets.js';
import { startStack, type Stack } from '../../stack/stack.js';
import { episodeRows, type TrajectoryRow } from '../../trajectory/index.js';
import { readTrajectories, streamRows } from '../helpers/arrow.js';
import { startTestEngines, testConfig, type TestEngines } from '../helpers/stack.js';

let engines: TestEngines;
let stack: Stack;
const run = Date.now().toString(36);

beforeAll(async () => {
  engines = await startTestEngines({ count: 2, wanderProbability: 0.4 });
  // Lower bounds of tasks and episodes, so a request past them fits the built-in pack.
  stack = await startStack(testConfig({ engines: engines.instances, bounds: { maxTasksPerBatch: 8, maxEpisodesPerBatch: 20 } }));
});

afterAll(async () => {
  await stack?.stop();
  await engines?.close();
});

async function api(method: 'GET' | 'POST', route: string, body?: unknown, token: string | null = stack.apiToken): Promise<{ status: number; json: any }> {
  const auth: Record<string, string> = token === null ? {} : { authorization: `Bearer ${token}` };
  const response = await fetch(`${stack.apiUrl}${route}`, {
    method,
    headers: body === undefined ? auth : { ...auth, 'content-type': 'application/json' },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : undefined };
}

async function data(batchId: string, query = ''): Promise<{ status: number; type: string | null; rows: TrajectoryRow[] }> {
  const response = await fetch(`${stack.apiUrl}/v1/batches/${batchId}/data${query}`, { headers: { authorization: `Bearer ${stack.apiToken}` } });
  return { status: response.status, type: response.headers.get('content-type'), rows: streamRows(new Uint8Array(await response.arrayBuffer())) };
}

async function waitForManifest(batchId: string): Promise<BatchManifest> {
  for (;;) {
    const { json } = await api('GET', `/v1/batches/${batchId}`);
    if (json.manifest) return json.manifest as BatchManifest;
    if (json.status !== 'running') throw new Error(`batch ${batchId} is ${json.status}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

describe('the HTTP batch API on a real stack', () => {
  // Three tasks, two samples each, two episodes at a time: the groups run one after another, so
  // the first finishes while the others have not started.
  const batchId = `api-${run}`;
  const body = { batch_id: batchId, task_ids: ['js-ini-parser-1', 'py-roman-numerals-1', 'js-lru-cache-1'], n: 2, concurrency: 2, filter_uniform_groups: false };
  let early: { answer: FinishedGroupsAnswer; status: string; done: number; total: number };
  let manifest: BatchManifest;
  let rows: TrajectoryRow[];

  it('starts a batch once when the same id is posted twice', async () => {
    const [first, second] = await Promise.all([api('POST', '/v1/batches', body), api('POST', '/v1/batches', body)]);
    expect(first).toEqual({ status: 202, json: { batch_id: batchId } });
    expect(second).toEqual({ status: 202, json: { batch_id: batchId } });
    const again = await api('POST', '/v1/batches', body);
    expect(again).toEqual({ status: 202, json: { batch_id: batchId } });
    let runs = 0;
    for await (const _ of stack.client.workflow.list({ query: `WorkflowId = "${batchId}"` })) runs++;
    expect(runs).toBe(1);
  });

  it('hands over the first finished group by long-poll while the batch still runs', async () => {
    const { status, json } = await api('GET', `/v1/batches/${batchId}/groups?after=0&timeout_s=120`);
    const now = await api('GET', `/v1/batches/${batchId}`);
    expect(status).toBe(200);
    early = { answer: json, status: now.json.status, done: now.json.progress.done, total: now.json.progress.total };
    expect(early.answer.groups.length).toBeGreaterThan(0);
    expect(early.answer.next).toBe(early.answer.groups.length);
    expect(early.answer.done).toBe(false);
    expect(early.status).toBe('running');
    expect(early.done).toBeLessThan(early.total);
    const p = now.json.progress;
    expect(p.done + p.running + p.queued).toBe(p.total);
    // The group's own file is there already, with its rows only.
    const group = early.answer.groups[0]!;
    expect(group.n_requested).toBe(2);
    if (group.file) {
      const groupRows = readTrajectories(group.file.uri);
      expect(groupRows.length).toBe(group.file.rows);
      expect(new Set(groupRows.map((r) => r.group_id))).toEqual(new Set([group.group_id]));
    } else {
      expect(group.status).toBe('failure');
    }
  });

  it('follows the cursor to the end, and the manifest lists the same groups in the same order', async () => {
    const seen: FinishedGroup[] = [...early.answer.groups];
    let cursor = early.answer.next;
    for (;;) {
      const { json } = await api('GET', `/v1/batches/${batchId}/groups?after=${cursor}&timeout_s=60`);
      seen.push(...(json as FinishedGroupsAnswer).groups);
      cursor = json.next;
      if (json.done) break;
    }
    manifest = await waitForManifest(batchId);
    expect(manifest.status).toBe('complete');
    expect(seen).toEqual(manifest.groups);
    expect(manifest.groups.map((g) => g.task_id).sort()).toEqual([...body.task_ids].sort());
    expect(manifest.files).toEqual(manifest.groups.flatMap((g) => (g.file ? [g.file] : [])));
    const { json: past } = await api('GET', `/v1/batches/${batchId}/groups?after=${cursor}&timeout_s=5`);
    expect(past).toEqual({ groups: [], next: cursor, done: true });
  });

  it('streams the finished rows as Arrow, matching the store', async () => {
    const answer = await data(batchId);
    expect(answer.status).toBe(200);
    expect(answer.type).toBe('application/vnd.apache.arrow.stream');
    rows = answer.rows;
    const finished = new Set(manifest.groups.filter((g) => g.status === 'finished').map((g) => g.group_id));
    expect(finished.size).toBeGreaterThan(0);
    const stored = await episodeRows(stack.store, (await stack.store.listEpisodes(batchId)).filter((e) => finished.has(e.groupId)));
    expect(rows.map((r) => r.trajectory_id).sort()).toEqual(stored.map((r) => r.trajectory_id).sort());
    const byId = new Map(stored.map((r) => [r.trajectory_id, r]));
    for (const row of rows) {
      const want = byId.get(row.trajectory_id)!;
      expect(row.input_ids).toEqual(want.input_ids);
      expect(row.sampled_mask).toEqual(want.sampled_mask);
      expect(row.logprobs).toEqual(Array.from(Float32Array.from(want.logprobs)));
      expect(row.reward).toBe(want.reward);
    }
    const one = [...finished][0]!;
    const selected = await data(batchId, `?group_id=${encodeURIComponent(one)}`);
    expect(selected.rows.length).toBe(rows.filter((r) => r.group_id === one).length);
    expect(new Set(selected.rows.map((r) => r.group_id))).toEqual(new Set([one]));
  });

  it('records acknowledged groups and leaves them out of the unacked data', async () => {
    const one = manifest.groups.find((g) => g.status === 'finished')!.group_id;
    const acked = await api('POST', `/v1/batches/${batchId}/ack`, { group_ids: [one] });
    expect(acked).toEqual({ status: 200, json: { batch_id: batchId, acked_group_ids: [one] } });
    expect((await api('GET', `/v1/batches/${batchId}`)).json.acked_group_ids).toEqual([one]);
    const unacked = await data(batchId, '?unacked=true');
    expect(unacked.rows.length).toBe(rows.filter((r) => r.group_id !== one).length);
    expect(unacked.rows.some((r) => r.group_id === one)).toBe(false);
    const unknown = await api('POST', `/v1/batches/${batchId}/ack`, { group_ids: ['no-such-group'] });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error.message).toContain('no-such-group');
  });

  it('reports log-prob consistency on the recorded log-probs, with a known perturbation', async () => {
    const sampled = (r: TrajectoryRow) => r.sampled_mask.map((m, i) => (m === 1 ? i : -1)).filter((i) => i >= 0);
    const response = (r: TrajectoryRow, shift: number) => r.logprobs.slice(r.prompt_length).map((lp, i) => (r.sampled_mask[r.prompt_length + i] === 1 ? lp + shift : 0));
    const exact = await api('POST', `/v1/batches/${batchId}/logprobs`, { trajectories: rows.map((r) => ({ trajectory_id: r.trajectory_id, logprobs: response(r, 0) })) });
    expect(exact.status).toBe(200);
    const tokens = rows.reduce((sum, r) => sum + sampled(r).length, 0);
    expect(exact.json).toMatchObject({ batch_id: batchId, trajectories: rows.length, tokens, mean_abs_prob_diff: 0, max_abs_prob_diff: 0 });
    expect(exact.json.pearson).toBeCloseTo(1, 9);
    // Every turn ran at the configured temperature with the engine's raw log-probs: one group, the one compared.
    expect(exact.json.compared).toEqual({ temperature: 1, logprobs_mode: 'raw' });
    expect(exact.json.groups).toEqual([expect.objectContaining({ temperature: 1, logprobs_mode: 'raw', compared: true, tokens })]);
    // A trainer that recomputed at another temperature is told so, not given figures of unlike tokens.
    const unlike = await api('POST', `/v1/batches/${batchId}/logprobs`, { temperature: 0.7, trajectories: rows.map((r) => ({ trajectory_id: r.trajectory_id, logprobs: response(r, 0) })) });
    expect(unlike.status).toBe(400);
    expect(unlike.json.error.message).toBe('no sampled token was recorded at temperature 0.7 with any log-probs; the trajectories hold temperature 1 with raw log-probs');

    // One trajectory's trainer log-probs are lower by 0.5 on every sampled token.
    const victim = rows[rows.length - 1]!;
    const perturbed = await api('POST', `/v1/batches/${batchId}/logprobs`, {
      trajectories: rows.map((r) => ({ trajectory_id: r.trajectory_id, logprobs: r === victim ? response(r, -0.5) : response(r, 0) })),
      top_k: 2,
    });
    expect(perturbed.status).toBe(200);
    const victimDiffs = sampled(victim).map((i) => Math.exp(victim.logprobs[i]!) * (1 - Math.exp(-0.5)));
    expect(perturbed.json.worst[0]).toMatchObject({ trajectory_id: victim.trajectory_id, tokens: victimDiffs.length });
    expect(perturbed.json.worst[0].mean_abs_prob_diff).toBeCloseTo(victimDiffs.reduce((a, b) => a + b, 0) / victimDiffs.length, 6);
    expect(perturbed.json.mean_abs_prob_diff).toBeCloseTo(victimDiffs.reduce((a, b) => a + b, 0) / tokens, 6);
    expect(perturbed.json.max_abs_prob_diff).toBeCloseTo(Math.max(...victimDiffs), 6);
    expect(perturbed.json.worst).toHaveLength(Math.min(2, rows.length));
    expect(perturbed.json.pearson).toBeLessThan(1);
    expect(perturbed.json.pearson).toBeGreaterThan(0.5);

    // Stored with the batch, listed with it, and served at its URI.
    const listed = (await api('GET', `/v1/batches/${batchId}`)).json.logprob_reports as string[];
    expect(listed).toContain(exact.json.report_uri);
    expect(listed).toContain(perturbed.json.report_uri);
    expect((await api('GET', perturbed.json.report_uri as string)).json).toEqual(perturbed.json);

    const unknown = await api('POST', `/v1/batches/${batchId}/logprobs`, { trajectories: [{ trajectory_id: 'nope_0_0', logprobs: [] }] });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error.message).toContain('nope_0_0');
  });

  it('starts by name from a raw Temporal client with only taskIds and n, and the update hands over groups', async () => {
    const workflowId = `raw-${run}`;
    const handle = await stack.client.workflow.start('batchWorkflow', {
      taskQueue: stack.config.temporal.taskQueue,
      workflowId,
      args: [{ taskIds: ['py-slugify-1'], n: 1 }],
    });
    await expect(handle.executeUpdate('finishedGroups', { args: [{ after: -1 }] })).rejects.toBeInstanceOf(WorkflowUpdateFailedError);
    const answer = (await handle.executeUpdate('finishedGroups', { args: [{ after: 0 }] })) as FinishedGroupsAnswer;
    expect(answer.groups).toHaveLength(1);
    expect(answer.groups[0]).toMatchObject({ task_id: 'py-slugify-1', n_requested: 1 });
    const result = (await handle.result()) as BatchManifest;
    expect(result).toMatchObject({ batch_id: workflowId, status: 'complete', stats: { episodes: 1 } });
    expect(result.groups).toEqual(answer.groups);
  });

  it('cancels a running batch: its manifest says cancelled and keeps what finished', async () => {
    const cancelId = `cancel-${run}`;
    expect((await api('POST', '/v1/batches', { batch_id: cancelId, n: 2, concurrency: 2 })).status).toBe(202);
    const first = await api('GET', `/v1/batches/${cancelId}/groups?after=0&timeout_s=120`);
    expect(first.json.groups.length).toBeGreaterThan(0);
    expect(await api('POST', `/v1/batches/${cancelId}/cancel`)).toEqual({ status: 202, json: { batch_id: cancelId, status: 'cancel_requested' } });
    const cancelled = await waitForManifest(cancelId);
    expect(cancelled.status).toBe('cancelled');
    // Cancelled in Temporal too (the UI shows it so); the manifest is still there.
    expect((await api('GET', `/v1/batches/${cancelId}`)).json.status).toBe('cancelled');
    expect(cancelled.groups).toHaveLength(8);
    expect(cancelled.groups.slice(0, first.json.groups.length)).toEqual(first.json.groups);
    expect(cancelled.groups.flatMap((g) => g.failures.map((f) => f.reason))).toContain('cancelled');
    const again = await api('POST', `/v1/batches/${cancelId}/cancel`);
    expect(again.status).toBe(409);
    expect(again.json.error.type).toBe('conflict');
  });

  it('publishes an OpenAPI document listing every route', async () => {
    const { status, json } = await api('GET', '/openapi.json');
    expect(status).toBe(200);
    expect(json.openapi).toBe('3.1.0');
    const operations = Object.entries(json.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    expect(operations.sort()).toEqual(
      [
        'POST /v1/batches',
        'GET /v1/batches/{id}',
        'GET /v1/batches/{id}/groups',
        'GET /v1/batches/{id}/data',
        'POST /v1/batches/{id}/ack',
        'POST /v1/batches/{id}/cancel',
        'POST /v1/batches/{id}/logprobs',
        'GET /v1/batches/{id}/logprobs/{report_id}',
        'GET /v1/policy',
        'POST /v1/policy/pause',
        'POST /v1/policy/resume',
      ].sort(),
    );
    const create = json.paths['/v1/batches'].post;
    expect(create.requestBody.content['application/json'].schema.properties.n.type).toBe('integer');
    expect(json.paths['/v1/batches/{id}/groups'].get.parameters.map((p: { name: string }) => p.name)).toEqual(['id', 'after', 'timeout_s']);
  });

  it.each([
    ['POST', '/v1/batches', { n: 0 }, 'n'],
    ['POST', '/v1/batches', { n: 1, bogus: true }, 'bogus'],
    ['POST', '/v1/batches', { n: 1, task_ids: ['no-such-task'] }, 'no-such-task'],
    ['POST', '/v1/batches', '{"n": ', 'JSON'],
    ['GET', `/v1/batches/${batchId}/groups?after=-1`, undefined, 'after'],
    ['GET', '/v1/batches/bad%20id', undefined, 'id'],
    ['POST', `/v1/batches/${batchId}/ack`, { group_ids: [] }, 'group_ids'],
    ['POST', `/v1/batches/${batchId}/logprobs`, { trajectories: [{ trajectory_id: 'x', logprobs: ['a'] }] }, 'logprobs'],
    ['POST', '/v1/policy/pause', { mode: 'now' }, 'mode'],
    ['POST', '/v1/policy/resume', { version: -1 }, 'version'],
  ] as const)('answers %s %s with a clear 400', async (method, route, payload, mentions) => {
    const { status, json } = await api(method, route, payload);
    expect(status).toBe(400);
    expect(json.error.type).toBe('invalid_request');
    expect(json.error.message).toContain(mentions);
  });

  it('answers an unknown batch with 404', async () => {
    const { status, json } = await api('GET', '/v1/batches/no-such-batch');
    expect(status).toBe(404);
    expect(json).toEqual({ error: { type: 'not_found', message: 'no batch no-such-batch' } });
  });
});

/** Whether Temporal has a workflow with this id: a refused request must have started none. */
async function workflowExists(id: string): Promise<boolean> {
  try {
    await stack.client.workflow.getHandle(id).describe();
    return true;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return false;
    throw error;
  }
}

describe('the batch API refuses what would hurt the stack, before anything starts', () => {
  const eight = ['js-ini-parser-1', 'py-roman-numerals-1', 'js-lru-cache-1', 'py-slugify-1', 'js-csv-split-1'];

  it.each([
    [{ n: 65 }, 'n is 65, above bounds.maxSamplesPerTask = 64'],
    [{ n: 1_000_000_000, task_ids: ['py-slugify-1'] }, 'bounds.maxSamplesPerTask'],
    [{ n: 1, task_ids: [...eight, ...eight] }, 'taskIds (count) is 10, above bounds.maxTasksPerBatch = 8'],
    [{ n: 3 }, 'episodes (tasks × n) is 24, above bounds.maxEpisodesPerBatch = 20'],
    [{ n: 1, concurrency: 513 }, 'concurrency is 513, above bounds.maxConcurrency = 512'],
    [{ n: 1, limits: { max_turns: 1001 } }, 'limits.maxTurns is 1001, above bounds.maxTurns = 1000'],
    [{ n: 1, limits: { max_context_tokens: 2 ** 20 + 1 } }, 'bounds.maxContextTokens = 1048576'],
    [{ n: 1, limits: { max_wall_time_ms: 86_400_001 } }, 'bounds.maxWallTimeMs = 86400000'],
    [{ n: 1, limits: { max_infra_attempts: 11 } }, 'bounds.maxInfraAttempts = 10'],
    [{ n: 1, limits: { command_timeout_ms: 3_600_001 } }, 'bounds.commandTimeoutMs = 3600000'],
    [{ n: 1, sampling: { max_tokens: 262_145 } }, 'sampling.maxTokens is 262145, above bounds.maxTokens = 262144'],
  ])('answers %j with 400 naming the field and its bound, and starts no workflow', async (request, mentions) => {
    const batchId = `bound-${run}-${Math.random().toString(36).slice(2, 8)}`;
    const { status, json } = await api('POST', '/v1/batches', { batch_id: batchId, ...request });
    expect(status).toBe(400);
    expect(json.error.type).toBe('invalid_request');
    expect(json.error.message).toContain(mentions);
    expect(await workflowExists(batchId)).toBe(false);
  });

  it.each(['null', '[]', '"batch"', '7'])('answers a JSON %s body with 400, never a default batch', async (body) => {
    const { status, json } = await api('POST', '/v1/batches', body);
    expect(status).toBe(400);
    expect(json.error.message).toContain('request body');
  });

  it.each(['/etc', '../../../../etc/passwd', `${process.cwd()}/../outside.jsonl`])('answers tasks %s outside batch.taskRoots with 400', async (tasks) => {
    const batchId = `roots-${run}-${Math.random().toString(36).slice(2, 8)}`;
    const { status, json } = await api('POST', '/v1/batches', { batch_id: batchId, tasks, n: 1 });
    expect(status).toBe(400);
    expect(json.error.message).toContain('outside batch.taskRoots');
    expect(await workflowExists(batchId)).toBe(false);
  });

  it.each([
    ['POST', '/v1/batches', { batch_id: 'a..b', n: 1 }],
    ['POST', '/v1/batches', { batch_id: 'a/b', n: 1 }],
    ['POST', '/v1/batches', { batch_id: 'x'.repeat(201), n: 1 }],
    ['GET', '/v1/batches/a..b', undefined],
    ['GET', '/v1/batches/a%2Fb', undefined],
    ['POST', '/v1/batches/a..b/cancel', undefined],
    ['GET', `/v1/batches/api-${run}/data?group_id=..%2Fx`, undefined],
    ['GET', `/v1/batches/api-${run}/data?group_id=ok&group_id=a..b`, undefined],
    ['POST', `/v1/batches/api-${run}/ack`, { group_ids: ['a/b'] }],
  ] as const)('answers %s %s with a bad id with 400', async (method, route, payload) => {
    const { status, json } = await api(method, route, payload);
    expect(status).toBe(400);
    expect(json.error.message).toContain('no ".."');
    expect(await workflowExists('a..b')).toBe(false);
  });

  it.each([
    ['POST', '/v1/batches', { n: 1 }],
    ['GET', '/v1/batches/x', undefined],
    ['GET', '/v1/batches/x/groups', undefined],
    ['GET', '/v1/batches/x/data', undefined],
    ['POST', '/v1/batches/x/ack', { group_ids: ['x.g0'] }],
    ['POST', '/v1/batches/x/cancel', undefined],
    ['POST', '/v1/batches/x/logprobs', { trajectories: [{ trajectory_id: 't', logprobs: [] }] }],
    ['GET', '/v1/batches/x/logprobs/00000000-0000-4000-8000-000000000000', undefined],
    ['GET', '/v1/policy', undefined],
    ['POST', '/v1/policy/pause', { mode: 'finish' }],
    ['POST', '/v1/policy/resume', { version: 0 }],
  ] as const)('answers %s %s with 401 without the bearer token or with a wrong one', async (method, route, payload) => {
    for (const token of [null, 'wrong', `${stack.apiToken}x`]) {
      const { status, json } = await api(method, route, payload, token);
      expect(status, String(token)).toBe(401);
      expect(json.error.type).toBe('unauthorized');
    }
    expect((await api('GET', '/health', undefined, null)).status).not.toBe(401);
    expect(await api('GET', '/v1/policy')).toMatchObject({ status: 200, json: { paused: false } });
  });

  it('refuses a resume past version 2^31-1 on the API and on the gateway, and the version stays', async () => {
    const before = (await api('GET', '/v1/policy')).json.version as number;
    for (const version of [2 ** 31, Number.MAX_SAFE_INTEGER]) {
      const { status, json } = await api('POST', '/v1/policy/resume', { version });
      expect(status).toBe(400);
      expect(json.error.message).toContain('version');
      const direct = await fetch(`${stack.gatewayUrl}/admin/v1/policy/resume`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${gatewayAdminToken(stack.config)}` },
        body: JSON.stringify({ version }),
      });
      expect(direct.status).toBe(400);
    }
    expect((await api('GET', '/v1/policy')).json.version).toBe(before);
  });
});
