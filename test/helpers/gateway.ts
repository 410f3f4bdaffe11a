import type { FastifyInstance } from 'fastify';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { buildGateway, type EngineInstance, type GatewayOptions } from '../../gateway/server.js';
import { SqliteStore, type Store, type SessionInfo } from '../../trajectory/index.js';
import type { Codec } from '../../gateway/codec/index.js';
import { SAMPLING_DEFAULTS } from '../../gateway/sampling-schema.js';
import { testCodec } from './stack.js';

export const TEST_ADMIN_TOKEN = 'test-admin-token';

/** The shell tool the test scripts call, as an OpenAI function tool. */
export const SHELL_TOOLS = [
  { type: 'function', function: { name: 'shell', parameters: { type: 'object', properties: { command: { type: 'string' } } } } },
];

/** A scripted task ("Fix the widget") for gateway tests: two shell turns, then `finalTurns`. */
export function widgetScript(
  finalTurns: { thought: string; tool: { name: string; arguments: Record<string, unknown> } | null; content?: string }[] = [
    { thought: 'Done now.', tool: null, content: 'The widget is fixed.' },
  ],
) {
  return {
    taskId: 'widget',
    match: 'Fix the widget',
    solve: [
      { thought: 'List the files first.', tool: { name: 'shell', arguments: { command: 'ls' } } },
      { thought: 'Read the widget.', tool: { name: 'shell', arguments: { command: 'cat widget.py' } } },
      ...finalTurns,
    ],
    wander: [{ thought: 'Give up.', tool: null, content: 'No.' }],
  };
}

/** A session's info with test defaults (10 turns, 32k context, home `e0`). */
export function sessionInfo(overrides: Partial<SessionInfo> & { maxTurns?: number } = {}): SessionInfo {
  const { maxTurns = 10, ...given } = overrides;
  const rest = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined));
  return {
    batchId: 'b',
    taskId: 'widget',
    groupId: 'b.g0',
    episodeIndex: 0,
    agentName: 'test',
    homeInstance: 'e0',
    budgets: { maxTurns, maxContextTokens: 32_768, maxWallTimeMs: 600_000 },
    sampling: { ...SAMPLING_DEFAULTS, maxTokens: 512 },
    ...rest,
  };
}

/** A store in a fresh temporary directory. */
export function tempStore(prefix: string): Store {
  return SqliteStore.open(path.join(mkdtempSync(path.join(os.tmpdir(), prefix)), 'store.sqlite'));
}

/**
 * A real gateway on a free port of 127.0.0.1, over the given engines and store. Its replica id
 * is fixed (`test-gateway` unless given), so a restarted test gateway owns its sessions again.
 */
export async function startTestGateway(
  store: Store,
  engines: EngineInstance[],
  router?: GatewayOptions['router'],
  replica: GatewayOptions['replica'] = {},
  codec?: Codec,
): Promise<{ gateway: FastifyInstance; url: string }> {
  const gateway = await buildGateway({
    codec: codec ?? (await testCodec()),
    store,
    engines,
    modelName: 'Qwen/Qwen3-8B',
    adminToken: TEST_ADMIN_TOKEN,
    router,
    replica: { id: 'test-gateway', ...replica },
  });
  await gateway.listen({ host: '127.0.0.1', port: 0 });
  const address = gateway.server.address();
  return { gateway, url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` };
}

/** Opens a session through the admin API and returns its key. */
export async function openTestSession(url: string, sessionId: string, info: SessionInfo = sessionInfo()): Promise<string> {
  const r = await fetch(`${url}/admin/v1/sessions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
    body: JSON.stringify({ sessionId, episodeId: sessionId, attempt: 0, info }),
  });
  expect(r.status).toBe(200);
  return ((await r.json()) as { key: string }).key;
}

/** Closes a session through the admin API and returns its summary. */
export async function closeTestSession(url: string, sessionId: string, reason = 'stop'): Promise<any> {
  const r = await fetch(`${url}/admin/v1/sessions/${encodeURIComponent(sessionId)}/close`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
    body: JSON.stringify({ reason }),
  });
  return r.json();
}
