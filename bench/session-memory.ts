/**
 * node --expose-gc --import tsx bench/session-memory.ts
 *
 * Memory a live session holds in the gateway: BENCH_SESSIONS (default 100) sessions on an
 * in-process gateway (real SQLite store, engine-sim in its own process at time scale 0) each grow
 * over BENCH_TURNS (default 16) turns to about 30k tokens and stay open; then heap plus array
 * buffers after a full GC, per session. Closing the sessions and collecting again splits that into
 * the sessions' own state and what outlives them (the router's hasher and prefix index).
 * BENCH_CONCURRENCY (default 8) sessions run at a time. Prints figures; asserts nothing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadCodec } from '../gateway/codec/index.js';
import { buildGateway } from '../gateway/server.js';
import { SqliteStore, type SessionInfo } from '../trajectory/index.js';
import { SAMPLING_DEFAULTS } from '../gateway/sampling-schema.js';

const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 100);
const TURNS = Number(process.env.BENCH_TURNS ?? 16);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const ADMIN = 'bench-admin';
const tools = [{ type: 'function', function: { name: 'shell', parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } } }];

/** About 1.9k tokens of tool output, different per session and turn so nothing dedupes. */
function toolOutput(session: number, turn: number): string {
  const lines: string[] = [];
  for (let i = 0; i < 58; i++) lines.push(`src/module_${session}_${turn}/file_${i}.py:${i * 7}: def handler_${i}(request, ctx): return ctx.value + ${i}`);
  return lines.join('\n');
}

async function spawnEngine(dir: string): Promise<{ url: string; child: ChildProcess }> {
  const scriptFile = path.join(dir, 'script.json');
  const step = { thought: 'Look further.', tool: { name: 'shell', arguments: { command: 'grep -rn handler src' } } };
  writeFileSync(scriptFile, JSON.stringify({ wanderProbability: 0, tasks: [{ taskId: 'mem', match: 'Memory session', solve: Array.from({ length: TURNS + 1 }, () => step) }] }));
  const main = fileURLToPath(new URL('../engine-sim/main.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', main, '--script', scriptFile, '--time-scale', '0', '--kv-capacity', '8000000'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()));
    child.once('exit', (code) => reject(new Error(`engine-sim exited with ${code}`)));
  });
  return { url, child };
}

const admin = { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` };

/** Opens session `s` and runs its turns; returns its id and final prompt size. */
async function runSession(url: string, s: number): Promise<{ sessionId: string; promptTokens: number }> {
  const sessionId = `mem-${s}`;
  const info: SessionInfo = {
    batchId: 'mem', taskId: 'mem', groupId: 'mem.g0', episodeIndex: s, agentName: 'mem', homeInstance: 'e0',
    budgets: { maxTurns: TURNS + 1, maxContextTokens: 65_536, maxWallTimeMs: 3_600_000 },
    sampling: { ...SAMPLING_DEFAULTS, maxTokens: 64 },
  };
  const open = await fetch(`${url}/admin/v1/sessions`, { method: 'POST', headers: admin, body: JSON.stringify({ sessionId, episodeId: sessionId, attempt: 0, info }) });
  if (!open.ok) throw new Error(`opening session ${s} answered ${open.status}: ${await open.text()}`);
  const { key } = (await open.json()) as { key: string };
  const messages: unknown[] = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: `Memory session ${s}: inspect the repository.` },
  ];
  let promptTokens = 0;
  for (let turn = 0; turn < TURNS; turn++) {
    const r = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify({ messages, tools, max_tokens: 64 }) });
    const body = (await r.json()) as { choices?: { message: unknown }[]; usage?: { prompt_tokens: number } };
    if (!r.ok || !body.choices) throw new Error(`turn ${turn} of session ${s} answered ${r.status}: ${JSON.stringify(body)}`);
    promptTokens = body.usage?.prompt_tokens ?? 0;
    messages.push(body.choices[0]!.message, { role: 'tool', tool_call_id: 'x', content: toolOutput(s, turn) });
  }
  return { sessionId, promptTokens };
}

interface Held {
  heap: number;
  buffers: number;
}

/** After full collections: array buffers are freed by a sweeper that runs after the GC returns. */
async function held(): Promise<Held> {
  const gc = (globalThis as { gc?: () => void }).gc!;
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const m = process.memoryUsage();
  return { heap: m.heapUsed, buffers: m.arrayBuffers };
}

async function main(): Promise<void> {
  if (!(globalThis as { gc?: () => void }).gc) throw new Error('run with node --expose-gc');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-mem-'));
  const store = SqliteStore.open(path.join(dir, 'store.sqlite'));
  let engine: { url: string; child: ChildProcess } | undefined;
  let gateway: Awaited<ReturnType<typeof buildGateway>> | undefined;
  try {
    engine = await spawnEngine(dir);
    gateway = await buildGateway({ codec: await loadCodec(), store, engines: [{ name: 'e0', kind: 'vllm', url: engine.url }], modelName: 'Qwen/Qwen3-8B', adminToken: ADMIN });
    await gateway.listen({ host: '127.0.0.1', port: 0 });
    const address = gateway.server.address();
    const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    // One session first, closed again: codec caches and code paths warm before the baseline.
    const warm = await runSession(url, SESSIONS);
    await fetch(`${url}/admin/v1/sessions/${warm.sessionId}/close`, { method: 'POST', headers: admin, body: JSON.stringify({ reason: 'done' }) });
    const before = await held();
    const cpu0 = process.cpuUsage();
    const done: { sessionId: string; promptTokens: number }[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < SESSIONS) done.push(await runSession(url, next++));
      }),
    );
    const cpu = process.cpuUsage(cpu0);
    const live = await held();
    for (const { sessionId } of done) {
      await fetch(`${url}/admin/v1/sessions/${sessionId}/close`, { method: 'POST', headers: admin, body: JSON.stringify({ reason: 'done' }) });
    }
    const closed = await held();
    const tokens = done.reduce((sum, d) => sum + d.promptTokens, 0) / done.length;
    const kib = (a: Held, b: Held) => {
      const per = (bytes: number) => `${(bytes / SESSIONS / 1024).toFixed(0)} KiB`;
      return `${per(a.heap + a.buffers - b.heap - b.buffers)} (heap ${per(a.heap - b.heap)}, array buffers ${per(a.buffers - b.buffers)})`;
    };
    console.log(`${SESSIONS} live sessions of ${TURNS} turns, last prompt ${tokens.toFixed(0)} tokens on average`);
    console.log(`held per live session after GC: ${kib(live, before)}`);
    console.log(`  of which the sessions' own state (freed by closing them): ${kib(live, closed)}`);
    console.log(`  outliving them (router hasher, prefix index, caches): ${kib(closed, before)}`);
    console.log(`process CPU per turn (gateway and load generator): ${((cpu.user + cpu.system) / 1000 / (SESSIONS * TURNS)).toFixed(2)} ms`);
  } finally {
    await gateway?.close();
    engine?.child.kill('SIGTERM');
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
