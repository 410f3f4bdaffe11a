import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import { inject } from 'vitest';
import { startEngineSim, type EngineSim, type PolicyScriptInput } from '../../engine-sim/index.js';
import { loadCodec, type Codec, type SyncTokenizer } from '../../gateway/codec/index.js';
import { loadJsTokenizer } from '../../gateway/codec/js-tokenizer.js';
import { ConfigSchema, type Config } from '../../stack/config.js';
import { builtinPackDir, loadTasks } from '../../tasks/loader.js';
import type { Task } from '../../tasks/schema.js';
import { scriptForTask } from '../../tasks/solution-script.js';
import { startRecordingProxy, type RecordedCompletion } from './recording-proxy.js';

/** A fixed answer of the simulated engine (engine-sim/script.ts), e.g. a judge's verdict. */
type FixedAnswerInput = NonNullable<PolicyScriptInput['answers']>[number];

let codec: Promise<Codec> | undefined;
/** The Qwen3 codec, loaded once per test file. */
export function testCodec(): Promise<Codec> {
  codec ??= loadCodec();
  return codec;
}

let engineTokenizer: Promise<SyncTokenizer> | undefined;
/** The synchronous (pure-JS) Qwen3 tokenizer engine-sim runs on, loaded once per test file. */
export function testEngineTokenizer(): Promise<SyncTokenizer> {
  engineTokenizer ??= loadJsTokenizer();
  return engineTokenizer;
}

export interface TestEngines {
  instances: { name: string; kind: 'vllm'; url: string; kvCapacityTokens: number }[];
  sims: EngineSim[];
  /** Every completion the engines returned, across instances. */
  recorded: RecordedCompletion[];
  close(): Promise<void>;
}

/** Simulated engines scripted with the built-in pack (and `tasks`, if given), each behind a recording proxy. */
export async function startTestEngines(options: {
  count: number;
  wanderProbability?: number;
  seed?: number;
  timeScale?: number;
  tasks?: Task[];
  answers?: FixedAnswerInput[];
}): Promise<TestEngines> {
  const tokenizer = await testEngineTokenizer();
  const tasks = [...(await loadTasks(builtinPackDir())), ...(options.tasks ?? [])];
  const script = {
    answers: options.answers ?? [],
    tasks: tasks.map(scriptForTask),
    wanderProbability: options.wanderProbability ?? 0.3,
  };
  const sims: EngineSim[] = [];
  const proxies: Awaited<ReturnType<typeof startRecordingProxy>>[] = [];
  const recorded: RecordedCompletion[] = [];
  for (let i = 0; i < options.count; i++) {
    const sim = await startEngineSim({
      tokenizer,
      script,
      kvCapacityTokens: 200_000,
      timeScale: options.timeScale ?? 0.01,
      seed: (options.seed ?? 7) + i,
    });
    sims.push(sim);
    proxies.push(await startRecordingProxy(sim.url, recorded));
  }
  return {
    instances: proxies.map((p, i) => ({
      name: `sim-${i}`,
      kind: 'vllm' as const,
      url: p.url,
      kvCapacityTokens: 200_000,
    })),
    sims,
    recorded,
    async close() {
      await Promise.all(proxies.map((p) => p.close()));
      await Promise.all(sims.map((s) => s.close()));
    },
  };
}

/** A configuration for a stack that joins the test run's Temporal server with its own queue and data. */
export function testConfig(
  overrides: Record<string, unknown> & { engines: TestEngines['instances'] },
): Config {
  const id = Math.random().toString(36).slice(2, 8);
  const base = {
    dataDir: mkdtempSync(path.join(inject('testDataRoot'), 'stack-')),
    temporal: { address: inject('temporalAddress'), taskQueue: `test-${id}` },
    gateway: { port: 0 },
    api: { port: 0 },
    worker: { hostId: `host-${id}` },
    limits: { commandTimeoutMs: 30_000 },
  };
  return ConfigSchema.parse({ ...base, ...overrides });
}
