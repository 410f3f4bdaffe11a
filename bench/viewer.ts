/**
 * npm run bench:viewer
 *
 * Whether the trajectory viewer stays fast on a large batch: it renders on demand (no whole-batch
 * page), so a page's cost should follow what it shows, not the batch. A stack (`startStack`:
 * embedded Temporal dev server, simulated engines, gateway, API) with a SQLite store this run
 * fills directly: a large batch of BENCH_EPISODES episodes (default 512) whose chains hold
 * BENCH_CHAIN_TOKENS tokens each (default 131072, over BENCH_TURNS turns, default 16), and a
 * small baseline batch of 4 episodes with 1024-token chains. Per page (batch list, batch page,
 * episode page, the first and the last token page of a chain) it prints the median and worst
 * wall time over BENCH_ROUNDS requests (default 5, interleaved large/small), the body size, and
 * the large/small ratios. Errors (non-200 answers) are counted and printed; the stack and its
 * folder are stopped and removed in `finally`. Prints figures; asserts nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../stack/config.js';
import { startStack, type Stack } from '../stack/stack.js';
import { SAMPLING_DEFAULTS } from '../gateway/sampling-schema.js';
import type { Store, StoredTurn } from '../trajectory/index.js';
import { syntheticTokens } from './synthetic-tokens.js';

const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const EPISODES = env('BENCH_EPISODES', 512);
const CHAIN_TOKENS = env('BENCH_CHAIN_TOKENS', 131_072);
const TURNS = env('BENCH_TURNS', 16);
const ROUNDS = env('BENCH_ROUNDS', 5);
/** Of each turn's tokens, the share the model sampled (the rest is its prompt delta). */
const SAMPLED_SHARE = 0.25;

const say = (line: string) => process.stdout.write(`${line}\n`);

interface Batch {
  id: string;
  episodes: number;
  chainTokens: number;
}

/** Writes one episode: a session, one chain of `chainTokens` tokens over TURNS turns, the episode record. */
async function writeEpisode(store: Store, batch: Batch, e: number): Promise<void> {
  const sessionId = `${batch.id}-s${e}`;
  const episodeId = `${batch.id}/e${e}`;
  const info = {
    batchId: batch.id, taskId: `task-${e % 8}`, groupId: `${batch.id}.g${e % 8}`, episodeIndex: e, agentName: 'builtin', homeInstance: 'sim-0',
    budgets: { maxTurns: TURNS, maxContextTokens: batch.chainTokens * 2, maxWallTimeMs: 3_600_000 },
    sampling: SAMPLING_DEFAULTS,
  };
  await store.createSession({ sessionId, key: `key-${sessionId}`, episodeId, attempt: 0, info });
  const perTurn = Math.floor(batch.chainTokens / TURNS);
  const sampledCount = Math.max(1, Math.floor(perTurn * SAMPLED_SHARE));
  for (let t = 0; t < TURNS; t++) {
    const sampled = syntheticTokens(e * 1000 + t, sampledCount);
    const turn: StoredTurn = {
      sessionId, chainIndex: 0, seq: t, turnIndex: t,
      promptDelta: syntheticTokens(e * 1000 + t + 500, perTurn - sampledCount), sampled, logprobs: sampled.map((_, i) => -((i % 7) + 1) / 10),
      finishReason: 'tool_call', cachedTokens: 0, temperature: 1, logprobsMode: 'raw', version: 0, sampledVersions: sampled.map(() => 0), tLlmS: 0.1,
      messagesJson: JSON.stringify([{ role: t === 0 ? 'user' : 'tool', content: `output of turn ${t}` }]),
      replyJson: JSON.stringify({ role: 'assistant', content: `turn ${t}` }), toolsJson: null, rolledBack: false,
    };
    await store.commitTurn(turn);
  }
  await store.closeSession(sessionId, 'done');
  await store.recordEpisode({
    episodeId, batchId: batch.id, taskId: info.taskId, groupId: info.groupId, episodeIndex: e, agentName: 'builtin', sessionId,
    outcome: 'ok', terminationReason: 'done', reward: (e % 5) / 4, rewardInfo: { reason: 'tests' }, numTurns: TURNS, numToolCalls: TURNS, tEpisodeS: 60, tEnvS: 10,
  });
}

interface Timing {
  medianMs: number;
  worstMs: number;
  bytes: number;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-viewer-'));
  let stack: Stack | undefined;
  let errors = 0;
  try {
    stack = await startStack(await loadConfig(undefined, { dataDir: dir, 'gateway.port': 0, 'api.port': 0 }), { worker: false });
    const large: Batch = { id: 'large', episodes: EPISODES, chainTokens: CHAIN_TOKENS };
    const small: Batch = { id: 'small', episodes: 4, chainTokens: 1024 };
    const filling = performance.now();
    for (const batch of [small, large]) for (let e = 0; e < batch.episodes; e++) await writeEpisode(stack.store, batch, e);
    say(`viewer benchmark: batch "large" ${large.episodes} episodes x ${large.chainTokens} tokens, batch "small" ${small.episodes} x ${small.chainTokens}; store filled in ${((performance.now() - filling) / 1000).toFixed(0)} s`);
    const login = await fetch(`${stack.apiUrl}/viewer/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: stack.apiToken }), redirect: 'manual' });
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
    if (login.status !== 303 || !cookie) throw new Error(`viewer login answered ${login.status}`);
    const lastTokenPage = (b: Batch) => Math.max(0, Math.floor((b.chainTokens / TURNS - 1) / 2048) * 2048);
    const pages: [string, (b: Batch) => string][] = [
      ['batch list', () => '/viewer'],
      ['batch page', (b) => `/viewer/batches/${b.id}`],
      ['episode page', (b) => `/viewer/batches/${b.id}/episodes/${encodeURIComponent(`${b.id}/e${b.episodes - 1}`)}`],
      ['first token page', (b) => `/viewer/batches/${b.id}/episodes/${encodeURIComponent(`${b.id}/e0`)}/chains/0/turns/${TURNS - 1}`],
      ['last token page', (b) => `/viewer/batches/${b.id}/episodes/${encodeURIComponent(`${b.id}/e0`)}/chains/0/turns/${TURNS - 1}?offset=${lastTokenPage(b)}`],
    ];
    const get = async (route: string): Promise<{ ms: number; bytes: number }> => {
      const started = performance.now();
      const r = await fetch(`${stack!.apiUrl}${route}`, { headers: { cookie } });
      const body = await r.arrayBuffer();
      if (r.status !== 200) errors++;
      return { ms: performance.now() - started, bytes: body.byteLength };
    };
    const summary = (samples: { ms: number; bytes: number }[]): Timing => {
      const sorted = samples.map((s) => s.ms).sort((a, b) => a - b);
      return { medianMs: sorted[Math.floor(sorted.length / 2)]!, worstMs: sorted.at(-1)!, bytes: samples[0]!.bytes };
    };
    say('page             | large median / worst ms | large KiB | small median / worst ms | small KiB | large/small time');
    for (const [name, route] of pages) {
      const samples: Record<'large' | 'small', { ms: number; bytes: number }[]> = { large: [], small: [] };
      // A first request of each warms caches (the tokenizer, JIT); interleaved rounds after it.
      await get(route(large));
      await get(route(small));
      for (let r = 0; r < ROUNDS; r++) {
        samples.large.push(await get(route(large)));
        samples.small.push(await get(route(small)));
      }
      const [l, s] = [summary(samples.large), summary(samples.small)];
      say(`${name.padEnd(16)} | ${`${l.medianMs.toFixed(1)} / ${l.worstMs.toFixed(1)}`.padStart(23)} | ${(l.bytes / 1024).toFixed(1).padStart(9)} | ${`${s.medianMs.toFixed(1)} / ${s.worstMs.toFixed(1)}`.padStart(23)} | ${(s.bytes / 1024).toFixed(1).padStart(9)} | ${(l.medianMs / s.medianMs).toFixed(2).padStart(16)}`);
    }
  } catch (error) {
    say(`benchmark stopped early: ${(error as Error).message}`);
    process.exitCode = 1;
  } finally {
    await stack?.stop();
    rmSync(dir, { recursive: true, force: true });
    say(`errors: ${errors} non-200 answers; stack stopped, ${dir} removed`);
  }
}

await main();
