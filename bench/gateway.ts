/**
 * npm run bench:gateway
 *
 * The gateway's cost over calling the simulated engine directly, in one run:
 *   - added latency (p50, p99) and request rate at 1, 64 and 256 concurrent sessions whose
 *     contexts grow to about 32k tokens (agent-like: each turn appends a tool result of ~2k tokens);
 *     the direct path replays the very prompts the gateway sent, with the same concurrency;
 *   - incremental encode time per turn as the context grows (it should stay flat);
 *   - heap memory per session held by the gateway.
 * The engine runs in its own process with timeScale 0, so both paths measure software overhead,
 * not modelled GPU time.
 * Prints figures and ratios; asserts nothing. BENCH_SESSIONS="1,64,256" and BENCH_TURNS=16 adjust it.
 */
import type { FastifyInstance } from 'fastify';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadCodec, type ChatMessage, type Codec } from '../gateway/codec/index.js';
import { buildGateway } from '../gateway/server.js';
import { SqliteStore, type Store, type SessionInfo } from '../trajectory/index.js';

const SESSIONS = (process.env.BENCH_SESSIONS ?? '1,64,256').split(',').map(Number);
const TURNS = Number(process.env.BENCH_TURNS ?? 16);
const ADMIN = 'bench-admin';
const tools = [{ type: 'function', function: { name: 'shell', parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } } }];

/** About 2k tokens of plausible tool output, different per session and turn so nothing dedupes. */
function toolOutput(session: number, turn: number): string {
  const lines: string[] = [];
  for (let i = 0; i < 60; i++) lines.push(`src/module_${session}_${turn}/file_${i}.py:${i * 7}: def handler_${i}(request, ctx): return ctx.value + ${i}`);
  return lines.join('\n');
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

interface PathResult {
  latenciesMs: number[];
  seconds: number;
}

async function gatewayPath(url: string, sessions: number, level: number): Promise<{ result: PathResult; sessionIds: string[] }> {
  const latenciesMs: number[] = [];
  const sessionIds: string[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: sessions }, async (_, s) => {
      const sessionId = `bench-${level}-${s}`;
      sessionIds.push(sessionId);
      const info: SessionInfo = {
        batchId: 'bench', taskId: 'bench', groupId: 'bench.g0', episodeIndex: s, agentName: 'bench', homeInstance: 'e0',
        budgets: { maxTurns: TURNS + 1, maxContextTokens: 65_536, maxWallTimeMs: 3_600_000 },
        sampling: { temperature: 1, topP: 1, maxTokens: 64 },
      };
      const open = await fetch(`${url}/admin/v1/sessions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` }, body: JSON.stringify({ sessionId, episodeId: sessionId, attempt: 0, info }) });
      const { key } = (await open.json()) as { key: string };
      const messages: unknown[] = [
        { role: 'system', content: 'You are a coding agent.' },
        { role: 'user', content: `Benchmark session ${s}: inspect the repository.` },
      ];
      for (let turn = 0; turn < TURNS; turn++) {
        const t0 = performance.now();
        const r = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify({ messages, tools, max_tokens: 64 }) });
        const body = (await r.json()) as { choices: { message: unknown }[] };
        latenciesMs.push(performance.now() - t0);
        messages.push(body.choices[0]!.message, { role: 'tool', tool_call_id: 'x', content: toolOutput(s, turn) });
      }
    }),
  );
  return { result: { latenciesMs, seconds: (performance.now() - started) / 1000 }, sessionIds };
}

/** The prompts the gateway sent, per session in order, replayed straight to the engine. */
async function directPath(engineUrl: string, store: Store, sessionIds: string[]): Promise<PathResult> {
  const prompts = await Promise.all(sessionIds.map(async (id) => {
    let tokens: number[] = [];
    return (await store.loadTurns(id)).map((t) => {
      const prompt = [...tokens, ...t.promptDelta];
      tokens = [...prompt, ...t.sampled];
      return prompt;
    });
  }));
  const latenciesMs: number[] = [];
  const started = performance.now();
  await Promise.all(
    prompts.map(async (sessionPrompts) => {
      for (const prompt of sessionPrompts) {
        const t0 = performance.now();
        const r = await fetch(`${engineUrl}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'Qwen/Qwen3-8B', prompt, max_tokens: 64, logprobs: 0, return_token_ids: true, stream: true }) });
        await r.text();
        latenciesMs.push(performance.now() - t0);
      }
    }),
  );
  return { latenciesMs, seconds: (performance.now() - started) / 1000 };
}

/** Starts `engine-sim/main.ts` as a child process and waits for the URL it prints. */
async function spawnEngine(dir: string, script: object): Promise<{ url: string; child: ChildProcess }> {
  const scriptFile = path.join(dir, 'script.json');
  writeFileSync(scriptFile, JSON.stringify(script));
  const main = fileURLToPath(new URL('../engine-sim/main.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', main, '--script', scriptFile, '--time-scale', '0', '--kv-capacity', '4000000'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()));
    child.once('exit', (code) => reject(new Error(`engine-sim exited with ${code}`)));
  });
  return { url, child };
}

async function encodeTimes(codec: Codec): Promise<{ context: number; ms: number }[]> {
  const messages: ChatMessage[] = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: 'Inspect the repository.' },
  ];
  let context = (await codec.encoder.encodeFirst(messages, tools as never)).length;
  const rows: { context: number; ms: number }[] = [];
  for (let turn = 0; turn < TURNS; turn++) {
    const appended: ChatMessage[] = [{ role: 'tool', content: toolOutput(0, turn) }];
    const t0 = performance.now();
    const reps = 5;
    let delta: number[] = [];
    for (let i = 0; i < reps; i++) delta = await codec.encoder.encodeAppended(appended, tools as never);
    rows.push({ context, ms: (performance.now() - t0) / reps });
    context += 40 + delta.length;
  }
  return rows;
}

async function main(): Promise<void> {
  const codec = await loadCodec();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-gw-'));
  const store = SqliteStore.open(path.join(dir, 'store.sqlite'));
  const script = { wanderProbability: 0, tasks: [{ taskId: 'bench', match: 'Benchmark session', solve: Array.from({ length: TURNS + 1 }, () => ({ thought: 'Look further.', tool: { name: 'shell', arguments: { command: 'grep -rn handler src' } } })) }] };
  // The engine runs in its own process, as a real one would: both paths then measure the same
  // engine, and the gateway's cost is what this process adds.
  const engine = await spawnEngine(dir, script);
  const gateway: FastifyInstance = await buildGateway({ codec, store, engines: [{ name: 'e0', kind: 'vllm', url: engine.url }], modelName: 'Qwen/Qwen3-8B', adminToken: ADMIN });
  await gateway.listen({ host: '127.0.0.1', port: 0 });
  const address = gateway.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

  const encodes = await encodeTimes(codec);
  const finalContext = encodes[encodes.length - 1]!.context;
  console.log(`gateway benchmark: ${TURNS} turns per session, contexts growing to ${finalContext} tokens, engine timeScale 0, ${os.cpus().length} cores`);
  console.log('sessions | gateway p50 / p99 ms | direct p50 / p99 ms | added p50 / p99 ms | gateway req/s | direct req/s | rate ratio');
  for (const level of SESSIONS) {
    const { result: gw, sessionIds } = await gatewayPath(url, level, level);
    const direct = await directPath(engine.url, store, sessionIds);
    const [g50, g99, d50, d99] = [percentile(gw.latenciesMs, 50), percentile(gw.latenciesMs, 99), percentile(direct.latenciesMs, 50), percentile(direct.latenciesMs, 99)];
    const gRate = gw.latenciesMs.length / gw.seconds;
    const dRate = direct.latenciesMs.length / direct.seconds;
    console.log(
      `${String(level).padStart(8)} | ${g50.toFixed(1).padStart(8)} / ${g99.toFixed(1).padStart(8)} | ${d50.toFixed(1).padStart(8)} / ${d99.toFixed(1).padStart(7)} | ${(g50 - d50).toFixed(1).padStart(7)} / ${(g99 - d99).toFixed(1).padStart(7)} | ${gRate.toFixed(1).padStart(13)} | ${dRate.toFixed(1).padStart(12)} | ${(gRate / dRate).toFixed(2).padStart(10)}`,
    );
  }

  console.log('incremental encode of one ~2k-token tool result, by context already in the chain:');
  for (const row of encodes.filter((_, i, all) => i % 3 === 0 || i === all.length - 1)) {
    console.log(`  context ${String(row.context).padStart(6)} tokens: ${row.ms.toFixed(2)} ms`);
  }

  // Memory: sessions held live by the gateway (chains with their tokens), measured after GC.
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) {
    await gateway.close();
    gc();
    const before = process.memoryUsage().heapUsed;
    const fresh = await buildGateway({ codec, store, engines: [{ name: 'e0', kind: 'vllm', url: engine.url }], modelName: 'Qwen/Qwen3-8B', adminToken: ADMIN });
    await fresh.listen({ host: '127.0.0.1', port: 0 });
    const a = fresh.server.address();
    const n = 32;
    await gatewayPath(`http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`, n, 9_999);
    gc();
    const perSession = (process.memoryUsage().heapUsed - before) / n;
    console.log(`memory per live session at ${finalContext} tokens: ${(perSession / 1024).toFixed(0)} KiB of heap`);
    await fresh.close();
  } else {
    console.log('memory per session: run with node --expose-gc (npm run bench:gateway does)');
    await gateway.close();
  }
  engine.child.kill('SIGTERM');
  store.close();
  rmSync(dir, { recursive: true, force: true });
}

await main();
