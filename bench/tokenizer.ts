/**
 * Tokenizer benchmark: the native tokenizer (`tokenizers`, on the libuv thread pool) against the
 * pure-JS one (`@huggingface/tokenizers`, on the event loop) and the native one behind the exact
 * pre-token cache (cold: a new cache for each text; warm: one cache kept across texts), in the
 * same run.
 *
 *   npm run bench:tokenizer
 *
 * CPU µs per token (process.cpuUsage, which counts the thread pool too) and on the event-loop
 * thread alone (its /proc schedstat) encoding 2k- and 32k-token texts cut from the repository's own
 * files and on new tool output (file:line listings with module names never seen before), the
 * tokenizers interleaved text by text, with ratios against native; then the longest event-loop stall
 * (monitorEventLoopDelay max, and p99) and the wall time while 8 32k-token texts are encoded at
 * once; and the CPU of decoding a 2k-token turn (the native tokenizer decodes from the byte-level
 * vocabulary), and of streaming answers of 1k-32k tokens through the stream splitter against
 * decoding the whole answer at each token. On a loaded host the native stall is the OS
 * descheduling the loop thread behind the pool's.
 * Environment: BENCH_ROUNDS (default 8).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { jsTextTokenizer, JsTokenizer } from '../gateway/codec/js-tokenizer.js';
import { defaultModelDir, loadModelFiles } from '../gateway/codec/model-files.js';
import { loadNativeTokenizer } from '../gateway/codec/native-tokenizer.js';
import { withPretokenCache } from '../gateway/codec/pretoken-cache.js';
import { StreamSplitter } from '../gateway/codec/stream-splitter.js';
import type { TextTokenizer } from '../gateway/codec/tokenizer.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const CONCURRENT = 8;
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** CPU time of the event-loop thread alone, ms (schedstat's first field is ns on the CPU). */
function loopCpuMs(): number {
  return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
}

/** Texts of exactly `tokens` tokens, consecutive slices of the repository's sources and docs. */
function texts(sync: JsTokenizer, ids: number[], tokens: number, count: number): string[] {
  return Array.from({ length: count }, (_, i) => sync.decode(ids.slice(i * tokens, (i + 1) * tokens)));
}

/** A tokenizer, or a factory of one for each text (a cold cache). */
type Encoders = Record<string, TextTokenizer | (() => TextTokenizer)>;

async function cpuPerToken(name: string, tokenizers: Encoders, inputs: string[]): Promise<void> {
  const cpu: Record<string, number> = {};
  const loop: Record<string, number> = {};
  let tokens = 0;
  for (const text of inputs) {
    for (const [kind, entry] of Object.entries(tokenizers)) {
      const tk = typeof entry === 'function' ? entry() : entry;
      const start = cpuMs();
      const loopStart = loopCpuMs();
      const ids = await tk.encode(text);
      cpu[kind] = (cpu[kind] ?? 0) + cpuMs() - start;
      loop[kind] = (loop[kind] ?? 0) + loopCpuMs() - loopStart;
      if (kind === 'native') tokens += ids.length;
    }
  }
  const us = (ms: Record<string, number>, kind: string) => ((ms[kind] ?? 0) * 1000) / tokens;
  const kinds = Object.keys(tokenizers);
  console.log(
    `${name} (${inputs.length} texts, ${tokens} tokens each): CPU µs/token, all threads / event-loop thread: ` +
      kinds.map((k) => `${k} ${us(cpu, k).toFixed(2)} / ${us(loop, k).toFixed(2)}`).join(', ') +
      '; against native: ' +
      kinds.filter((k) => k !== 'native').map((k) => `${k} ${(us(cpu, k) / us(cpu, 'native')).toFixed(2)}x / ${(us(loop, k) / us(loop, 'native')).toFixed(2)}x`).join(', '),
  );
}

/** About 2k tokens of a tool's new output: paths and names never seen before (`seed` apart). */
function toolOutput(seed: number): string {
  return Array.from(
    { length: 50 },
    (_, i) => `src/module_${seed}_${seed * 7 + 3}/file_${i}.py:${i * 7}: def handler_${i}(request, ctx): return ctx.value + ${i}`,
  ).join('\n');
}

/** CPU per decode of a whole sampled turn, as the stream splitter decodes it at every chunk. */
function decodeCost(ids: number[], decoders: Record<string, { decode(ids: readonly number[]): string }>): void {
  const turn = ids.slice(0, 2048);
  const us: Record<string, number> = {};
  for (let round = 0; round < 20; round++) {
    for (const [kind, d] of Object.entries(decoders)) {
      const start = cpuMs();
      for (let i = 0; i < 10; i++) d.decode(turn);
      us[kind] = (us[kind] ?? 0) + (cpuMs() - start) * 1000 / 200;
    }
  }
  console.log(`decode of a 2k-token turn: ${Object.entries(us).map(([k, v]) => `${k} ${v.toFixed(0)} µs`).join(', ')}`);
}

/**
 * Streaming an answer token by token through the stream splitter (what a streamed turn costs the
 * gateway's loop), against decoding the whole answer at each token (how it streamed before: O(n²)),
 * at growing answer lengths; per token, so a flat row is linear.
 */
function streamCost(ids: number[], decoders: Record<string, Pick<TextTokenizer, 'decode'>>, endOfTurnId: number): void {
  for (const length of [1024, 8192, 32_768]) {
    const answer = ids.slice(0, length);
    const row: string[] = [];
    for (const [kind, d] of Object.entries(decoders)) {
      let start = cpuMs();
      const splitter = new StreamSplitter(d, endOfTurnId);
      for (const id of answer) splitter.push([id]);
      const incremental = ((cpuMs() - start) * 1000) / length;
      // The whole-answer decode is quadratic: measured on up to 8k tokens, 32k would take minutes.
      let whole = '(not run)';
      if (length <= 8192) {
        start = cpuMs();
        for (let k = 1; k <= length; k++) d.decode(answer.slice(0, k));
        const us = ((cpuMs() - start) * 1000) / length;
        whole = `${us.toFixed(1)} µs (${(us / incremental).toFixed(0)}x)`;
      }
      row.push(`${kind} ${incremental.toFixed(1)} µs, whole-answer decode ${whole}`);
    }
    console.log(`streaming a ${length}-token answer, CPU per token: ${row.join('; ')}`);
  }
}

async function stall(kind: string, tk: TextTokenizer, inputs: string[]): Promise<void> {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  // A timer keeps the loop turning, so a blocked loop shows as one long delay.
  const tick = setInterval(() => undefined, 1);
  delay.enable();
  // The histogram drops its first sample: let it take one before the loop may block.
  await new Promise((resolve) => setTimeout(resolve, 20));
  const start = performance.now();
  const cpu = cpuMs();
  await Promise.all(inputs.map((t) => tk.encode(t)));
  const wall = performance.now() - start;
  const used = cpuMs() - cpu;
  // The pure-JS encodes block before the loop turns again: let it turn once to record that.
  await new Promise((resolve) => setTimeout(resolve, 5));
  delay.disable();
  clearInterval(tick);
  console.log(
    `${CONCURRENT} concurrent 32k-token encodes, ${kind}: longest event-loop stall ${(delay.max / 1e6).toFixed(1)} ms ` +
      `(p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms), ` +
      `wall ${wall.toFixed(0)} ms, CPU ${used.toFixed(0)} ms`,
  );
}

async function main(): Promise<void> {
  const files = await loadModelFiles(defaultModelDir());
  let t = performance.now();
  const sync = new JsTokenizer(files);
  const jsMs = performance.now() - t;
  t = performance.now();
  const native = await loadNativeTokenizer(files);
  const nativeMs = performance.now() - t;
  console.log(`load: native ${nativeMs.toFixed(0)} ms, pure-JS ${jsMs.toFixed(0)} ms`);
  const js = jsTextTokenizer(files);

  const sources = execFileSync('git', ['ls-files'], { cwd: REPO, encoding: 'utf8' })
    .split('\n')
    .filter((f) => /\.(ts|md|py)$/.test(f))
    .map((f) => readFileSync(path.join(REPO, f), 'utf8'))
    .join('\n');
  const ids = sync.encode(sources);
  const needed = ROUNDS * 32_768 + CONCURRENT * 32_768;
  if (ids.length < needed) throw new Error(`the repository has ${ids.length} tokens, fewer than the ${needed} this needs`);
  const warm = withPretokenCache(native, files.tokenizerJson);
  const tokenizers: Encoders = {
    native,
    'pure-JS': js,
    'cached cold': () => withPretokenCache(native, files.tokenizerJson),
    'cached warm': warm,
  };
  // Warm them (the pure-JS tokenizer caches words, the native one its thread pool).
  for (const tk of [native, js, warm]) await tk.encode(sources.slice(0, 200_000));

  await cpuPerToken('2k-token texts', tokenizers, texts(sync, ids, 2048, ROUNDS * 16));
  await cpuPerToken('32k-token texts', tokenizers, texts(sync, ids, 32_768, ROUNDS));
  await cpuPerToken('2k-token new tool outputs', tokenizers, Array.from({ length: ROUNDS * 16 }, (_, i) => toolOutput(10_000 + i)));
  decodeCost(ids, { native, 'pure-JS': sync });
  streamCost(ids, { native, 'pure-JS': sync }, sync.tokenId('<|im_end|>'));
  const big = texts(sync, ids.slice(ROUNDS * 32_768), 32_768, CONCURRENT);
  await stall('native', native, big);
  await stall('pure-JS', js, big);
}

await main();
