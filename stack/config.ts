import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { z } from 'zod';
import { ROUTER_POLICY_NAMES, ROUTING_DEFAULTS } from '../scheduler/router.js';
import { KV_EVENT_DEFAULTS } from '../scheduler/routing/kv-event-index.js';
import { EPISODE_TIMEOUT_DEFAULTS } from '../workflows/episode-timeouts.js';
import { BOUND_DEFAULTS, type BatchBounds } from '../workflows/batch-bounds.js';
import { REPLICA_DEFAULTS } from '../gateway/replica/options.js';
import { GATEWAY_OUTAGE_DEFAULT_MS } from '../gateway/client/outage.js';
import { SamplingSchema } from '../gateway/sampling-schema.js';
import { FixedAnswerSchema } from '../engine-sim/script.js';
import type { EpisodeLimits } from '../activities/types.js';
import { ScreenConfigSchema } from '../tasks/reward/screen/config.js';

/** A bound of `bounds.*`: positive, and at most its default, which the batch workflow enforces. */
const bound = (key: keyof BatchBounds) =>
  z.number().int().positive().max(BOUND_DEFAULTS[key]).default(BOUND_DEFAULTS[key]);
import { API_MAX_BODY_BYTES, GATEWAY_MAX_BODY_BYTES } from '../gateway/limits.js';

const Engine = z.object({
  /** Unique instance name. */
  name: z.string().min(1),
  /** Engine API: `vllm` (OpenAI-compatible `/v1/completions`) or `sglang` (native `/generate`). Default `vllm`. */
  kind: z.enum(['vllm', 'sglang']).default('vllm'),
  /** Base URL, e.g. http://10.0.0.5:8000. */
  url: z.string().url(),
  /**
   * KV cache capacity in tokens (admission counts episodes against it). Default: what the engine
   * reports at start (vLLM's `vllm:cache_config_info`, SGLang's `max_total_num_tokens`), else unbounded.
   */
  kvCapacityTokens: z.number().int().positive().optional(),
  /**
   * The engine's KV-cache events (vLLM's or SGLang's `--kv-events-config` with the `zmq` publisher):
   * the router then knows which prefixes the engine really holds, falling back to its estimate
   * while the events are missing. Default none (the estimate only).
   */
  kvEvents: z
    .object({
      /** The publisher, e.g. `tcp://10.0.0.5:5557`. Default: what the engine reports (`GET /kv_event_sources`, vLLM). */
      endpoint: z.string().regex(/^tcp:\/\/[^*]+:\d+$/, 'a tcp://host:port address').optional(),
      /** Its replay socket, e.g. `tcp://10.0.0.5:5558`. Default: what the engine reports, else none (missed events stay missed). */
      replayEndpoint: z.string().regex(/^tcp:\/\/[^*]+:\d+$/, 'a tcp://host:port address').optional(),
      /** The publisher's topic. Default `''` (every topic). */
      topic: z.string().max(256).optional(),
    })
    .strict()
    .optional(),
});

/**
 * The configuration file (YAML or JSON). Every key has a default, so an empty file (or none) runs
 * the embedded stack: a Temporal dev server, simulated engines, the gateway and one worker.
 * README.md documents each key.
 */
export const ConfigSchema = z
  .object({
    dataDir: z.string().default('.data'),
    temporal: z
      .object({
        address: z.string().nullable().default(null),
        namespace: z.string().default('default'),
        /**
         * TLS to a Temporal cluster (not the embedded dev server). Default none (plain gRPC); `{}`
         * is TLS with the system's roots. Files are PEM.
         */
        tls: z
          .object({
            /** Client certificate for mTLS; needs `keyFile`. Default none. */
            certFile: z.string().optional(),
            /** Its private key; needs `certFile`. Default none. */
            keyFile: z.string().optional(),
            /** CA that signed the server's certificate. Default: the system's roots. */
            caFile: z.string().optional(),
            /** Server name for the TLS host name check (SNI). Default: the host of `address`. */
            serverName: z.string().optional(),
          })
          .strict()
          .refine(
            (t) => (t.certFile === undefined) === (t.keyFile === undefined),
            'certFile and keyFile go together',
          )
          .optional(),
        /** API key of a Temporal cluster (Temporal Cloud); env TEMPORAL_API_KEY. Default none. */
        apiKey: z.string().min(1).optional(),
        taskQueue: z.string().default('agent-rollout'),
        devServer: z
          .object({ port: z.number().int().default(7233), uiPort: z.number().int().default(8233) })
          .prefault({}),
      })
      .prefault({}),
    gateway: z
      .object({
        host: z.string().default('127.0.0.1'),
        port: z.number().int().min(0).default(8300),
        url: z.string().url().nullable().default(null),
        /**
         * Bearer token of the gateway's admin routes, shared by everything that calls them; env
         * ROLLOUT_GATEWAY_ADMIN_TOKEN. Default: with the SQLite store, one minted per data
         * directory; with a shared store it must be given.
         */
        adminToken: z.string().min(1).nullable().default(null),
        /**
         * Every gateway replica's base URL, for the clients (activities, the built-in agent, the
         * sandbox bridge, the batch API): a session's calls go to one by rendezvous hash of its id.
         * Default `[]`: `gateway.url`, or the gateway this process runs.
         */
        urls: z.array(z.string().url()).default([]),
        /**
         * This replica's id in the store (session owner, registration); keep it across restarts.
         * Default null: `<hostname>:<port>` (set it for several replicas on one host with port 0).
         */
        replicaId: z.string().min(1).nullable().default(null),
        /** The URL other replicas forward requests to. Default null: the URL it listens on. */
        advertiseUrl: z.string().url().nullable().default(null),
        /** How long a session stays owned by a replica without renewal (renewed every third), ms. Default 10000. */
        sessionOwnershipTtlMs: z
          .number()
          .int()
          .positive()
          .default(REPLICA_DEFAULTS.sessionOwnershipTtlMs),
        /** Interval between reads of the stored policy state (pause, version), ms. Default 500. */
        policyPollMs: z.number().int().positive().default(REPLICA_DEFAULTS.policyPollMs),
        /** The placement service every replica routes through. Default null: the router runs in-process. */
        placementUrl: z.string().url().nullable().default(null),
        /** Largest request body the gateway reads; a larger one answers 413. Default 16777216 (16 MiB). */
        maxBodyBytes: z.number().int().positive().default(GATEWAY_MAX_BODY_BYTES),
        /** Interface the placement service (`rollout placement`) listens on. Default 127.0.0.1. */
        placementHost: z.string().default('127.0.0.1'),
        /** Port of the placement service; 0 picks a free one. Default 8310. */
        placementPort: z.number().int().min(0).default(8310),
        /**
         * Gateway processes on this host (`rollout gateway`, and the embedded stack of `rollout
         * dev`/`demo`), each a replica on its own port (`port`, `port`+1, …; every one free with
         * port 0) with the id `<replicaId or hostname:port>/p<i>`, all on one store; the
         * stack's clients get every URL. More than the host's cores gives nothing. Default 1: the
         * gateway runs in-process.
         */
        processes: z.number().int().min(1).max(64).default(1),
        /**
         * Gateway processes (`processes` > 1) collect garbage on their own thread only (V8's
         * `--single-threaded-gc`): processes sharing the host's cores, V8's background GC threads
         * take CPU from the processes' event loops, and on one core its parallel pauses are long
         * (bench:gateway, open loop on one core: own added p99 14.5-17.8 ms with them, 6.0 ms
         * without). With `processes` 1 the gateway runs in-process, where a flag cannot be set
         * after start: run it as `node --single-threaded-gc --max-semi-space-size=64 cli/bin.mjs gateway`.
         * Default true.
         */
        singleThreadedGc: z.boolean().default(true),
        /**
         * V8's `--max-semi-space-size` of gateway processes (`processes` > 1), MiB: the young
         * generation a turn's garbage (request bodies, token arrays, engine chunks) dies in. V8's
         * default (16) promotes more of it to the old generation and collects more often:
         * bench:gateway, 64 sessions closed loop, rounds interleaved, CPU per turn 3.13 ms with 16,
         * 2.93 with 32, 2.88 with 64, 2.80 with 128; the open loop 3.24 against 3.16 ms. As with
         * `singleThreadedGc`, an in-process gateway takes it on its command line. Default 64.
         */
        maxSemiSpaceMiB: z.number().int().min(1).max(1024).default(64),
        /**
         * More node flags for gateway processes (`processes` > 1), after the two above: e.g.
         * `--max-old-space-size=16384`, or `--cpu-prof --cpu-prof-dir=<dir>` to profile them (Node
         * refuses that one in NODE_OPTIONS). An in-process gateway takes them on its command line.
         * Default `[]`.
         */
        nodeArgs: z.array(z.string().regex(/^--[a-z][a-z0-9_-]*(=.+)?$/, 'a node flag: --name or --name=value')).max(64).default([]),
        /**
         * Port of the metrics listener (`GET /metrics`, bearer: `adminToken`) of the process that
         * runs `processes` > 1 gateway processes placing through it: the router's metrics
         * (decisions, held calls, KV, engine health) are counted there, not in the processes' own
         * `/metrics`, which count their turns. 0 picks a free one. Default null: none. Only with
         * `processes` > 1 and no `placementUrl` (an in-process gateway's and the placement
         * service's `/metrics` have them).
         */
        metricsPort: z.number().int().min(0).max(65_535).nullable().default(null),
        /** Interface that metrics listener listens on. Default 127.0.0.1. */
        metricsHost: z.string().default('127.0.0.1'),
      })
      .prefault({}),
    /** The shared store of sessions, turns, episodes, leases and registrations (trajectory/store). */
    store: z
      .object({
        /**
         * `postgres://…` (many machines) or a SQLite file path (one machine); env
         * ROLLOUT_STORE_URL. Default: the SQLite file `<dataDir>/trajectories.sqlite`.
         */
        url: z.string().min(1).nullable().default(null),
      })
      .prefault({}),
    /** The trainer-facing HTTP batch API (api/), started with the stack. */
    api: z
      .object({
        /** Interface it listens on. Default 127.0.0.1. */
        host: z.string().default('127.0.0.1'),
        /** Port; 0 picks a free one. Default 8400 (the gateway has 8300). */
        port: z.number().int().min(0).default(8400),
        /**
         * Bearer token trainers must send (`Authorization: Bearer …`); env ROLLOUT_API_TOKEN.
         * Default: with the SQLite store, one minted per data directory (`<dataDir>/api-token`);
         * with a shared store it must be given.
         */
        token: z.string().min(1).nullable().default(null),
        /** Largest request body the API reads; a larger one answers 413. Default 67108864 (64 MiB). */
        maxBodyBytes: z.number().int().positive().default(API_MAX_BODY_BYTES),
      })
      .prefault({}),
    /** Where trajectory group files go: readable from every host that serves the API or exports. */
    artifacts: z
      .object({
        /**
         * `s3://bucket/prefix` (S3-compatible object storage), `file:///path` or a directory (a
         * shared file system in a cluster). Default none: `<dataDir>/batches`, for one machine.
         */
        uri: z.string().min(1).nullable().default(null),
        /** S3 connection; each key left out falls back to its `AWS_*` environment variable. */
        s3: z
          .object({
            endpoint: z.string().url().optional(),
            region: z.string().min(1).optional(),
            accessKeyId: z.string().min(1).optional(),
            secretAccessKey: z.string().min(1).optional(),
            forcePathStyle: z.boolean().optional(),
          })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
    model: z
      .object({
        dir: z.string().nullable().default(null),
        name: z.string().default('Qwen/Qwen3-8B'),
        enableThinking: z.boolean().default(true),
        toolParser: z.enum(['qwen3', 'qwen3-coder']).default('qwen3'),
        /**
         * The gateway's tokenizer: `native` (Hugging Face's Rust tokenizer, encoding on the thread
         * pool) or `js` (pure-JS, on the event loop). Default `native`; `js`, with a warning, where
         * the native module does not load.
         */
        tokenizer: z.enum(['native', 'js']).default('native'),
        /**
         * An exact cache of pre-token (word) ids in front of the tokenizer, for the tokenizers it
         * was verified on (Qwen2/2.5/3; others are used as they are). Default true.
         */
        tokenizerCache: z.boolean().default(true),
      })
      .prefault({}),
    engines: z.array(Engine).default([]),
    /**
     * The model judge of judge rewards and audits (tasks/reward/judge/): it calls the engines
     * above (or the simulated ones) directly, with `model.name`.
     */
    judge: z
      .object({
        /**
         * Price per token, in the operator's own unit: a judgement's `cost` is prompt tokens ×
         * `promptToken` + completion tokens × `completionToken`. Default 0 each (self-hosted
         * engines: read the token counts and `engineMs` instead).
         */
        prices: z
          .object({
            promptToken: z.number().min(0).default(0),
            completionToken: z.number().min(0).default(0),
          })
          .strict()
          .prefault({}),
        /** Wall time of one judge request to one engine, ms. Default 120000. */
        timeoutMs: z.number().int().positive().default(120_000),
      })
      .strict()
      .prefault({}),
    engineSim: z
      .object({
        instances: z.number().int().positive().default(2),
        basePort: z.number().int().min(0).default(8100),
        kvCapacityTokens: z.number().int().positive().default(200_000),
        timeScale: z.number().positive().default(0.05),
        wanderProbability: z.number().min(0).max(1).default(0.3),
        seed: z.number().int().default(1),
        tasks: z.string().default('builtin'),
        /**
         * Fixed answers for prompts holding given strings (engine-sim/script.ts), e.g. a judge's
         * verdict for the judge prompts of a demo task. Default none: judge prompts get "Done.".
         */
        answers: z.array(FixedAnswerSchema).default([]),
      })
      .prefault({}),
    sandbox: z
      .object({
        /**
         * The isolation of every sandbox, over the same images and host-side lifecycle:
         * `bubblewrap` (namespaces and a seccomp filter on the host kernel) or `gvisor` (each
         * command under its own user-space kernel, `runsc` from PATH). Default `bubblewrap`.
         */
        provider: z.enum(['bubblewrap', 'gvisor']).default('bubblewrap'),
        createFailureRate: z.number().min(0).max(1).default(0),
        faultSeed: z.number().int().default(0),
        ttlMs: z
          .number()
          .int()
          .positive()
          .default(2 * 60 * 60 * 1000),
        /** How often the janitor schedule sweeps every host's sandboxes. */
        janitorIntervalMs: z.number().int().positive().default(60_000),
        /**
         * Where sandbox root file systems come from: the base image, or a task's own OCI image
         * (`environment.image`) pulled with skopeo into a content-addressed layer cache.
         */
        images: z
          .object({
            /** The layer cache on this host. Default `<dataDir>/images`. */
            cacheDir: z.string().min(1).optional(),
            /** Registries (`host:port`) pulled from without TLS verification. Default none. */
            insecureRegistries: z.array(z.string().min(1)).default([]),
            /** A skopeo/containers auth file for private registries. Default none. */
            authFile: z.string().min(1).optional(),
          })
          .prefault({}),
        /** Per-sandbox limits; each left out takes the provider default (sandbox/provider.ts). */
        limits: z
          .object({
            memoryBytes: z.number().int().positive().optional(),
            maxProcesses: z.number().int().positive().optional(),
            cpus: z.number().positive().optional(),
            diskBytes: z.number().int().positive().optional(),
          })
          .prefault({}),
      })
      .prefault({}),
    agent: z
      .object({
        /** `builtin`, or a black-box agent preset: `mini-swe-agent`, `opencode`, `claude-code`, `codex`, `pi`. */
        name: z.string().default('builtin'),
        maxOutputBytes: z.number().int().positive().default(16_384),
      })
      .prefault({}),
    limits: z
      .object({
        maxTurns: z.number().int().positive().default(30),
        maxContextTokens: z.number().int().positive().default(32_768),
        maxWallTimeMs: z
          .number()
          .int()
          .positive()
          .default(30 * 60 * 1000),
        maxInfraAttempts: z.number().int().positive().default(3),
        commandTimeoutMs: z.number().int().positive().default(60_000),
        /**
         * How long the gateway may be unreachable (a restart) before an activity that needs it ends
         * the episode's attempt; until then model calls, session opens and closes, and black-box
         * agents' connections wait and retry. Worker configuration, not an episode limit. Default 90000.
         */
        gatewayOutageMs: z.number().int().positive().default(GATEWAY_OUTAGE_DEFAULT_MS),
      })
      .prefault({}),
    /** Every key is sent to the engine on every request (gateway/sampling-schema.ts has each default). */
    sampling: SamplingSchema.prefault({}),
    batch: z
      .object({
        tasks: z.string().default('builtin'),
        n: z.number().int().positive().default(4),
        concurrency: z.number().int().positive().default(8),
        filterUniformGroups: z.boolean().default(true),
        continueAfterEvents: z.number().int().positive().default(8_000),
        /**
         * Directories a batch's `tasks` may name (a pack directory or a task file under one of
         * them), besides `builtin`, so a request cannot read any file of the server. Default `[]`:
         * only paths under the working directory of the process that takes the request.
         */
        taskRoots: z.array(z.string().min(1)).default([]),
      })
      .prefault({}),
    /**
     * Upper bounds of a batch, checked before anything starts (workflows/batch-bounds.ts); each
     * may be lowered, never raised past its default, which the batch workflow itself enforces.
     */
    bounds: z
      .object({
        /** Samples per task (`n`). Default 64. */
        maxSamplesPerTask: bound('maxSamplesPerTask'),
        /** Tasks per batch. Default 10000. */
        maxTasksPerBatch: bound('maxTasksPerBatch'),
        /** Episodes per batch (tasks × n). Default 100000. */
        maxEpisodesPerBatch: bound('maxEpisodesPerBatch'),
        /** Episodes of a batch running at once. Default 512. */
        maxConcurrency: bound('maxConcurrency'),
        /** `limits.maxTurns`. Default 1000. */
        maxTurns: bound('maxTurns'),
        /** `limits.maxContextTokens`. Default 1048576. */
        maxContextTokens: bound('maxContextTokens'),
        /** `limits.maxWallTimeMs`. Default 86400000 (24 hours). */
        maxWallTimeMs: bound('maxWallTimeMs'),
        /** `limits.maxInfraAttempts`. Default 10. */
        maxInfraAttempts: bound('maxInfraAttempts'),
        /** `limits.commandTimeoutMs`. Default 3600000 (1 hour). */
        commandTimeoutMs: bound('commandTimeoutMs'),
        /** `sampling.maxTokens`. Default 262144. */
        maxTokens: bound('maxTokens'),
      })
      .strict()
      .prefault({}),
    worker: z
      .object({
        hostId: z.string().default(os.hostname()),
        maxConcurrentActivities: z.number().int().positive().default(64),
        maxConcurrentWorkflowTasks: z.number().int().positive().default(32),
        /**
         * How long work for a sandbox's host may wait for that host's worker before the attempt
         * fails and starts over on a live host, ms. Default 300000.
         */
        scheduleToStartMs: z
          .number()
          .int()
          .positive()
          .default(EPISODE_TIMEOUT_DEFAULTS.scheduleToStartMs),
        /** How long an attempt's cleanup (sandbox destroy) may wait for a dead host, ms; its TTL removes it later. Default 120000. */
        cleanupWindowMs: z
          .number()
          .int()
          .positive()
          .default(EPISODE_TIMEOUT_DEFAULTS.cleanupWindowMs),
        /**
         * Port of the worker's metrics listener (`GET /metrics`, bearer: the gateway admin token);
         * 0 picks a free one. Default null: none (in `rollout dev`/`demo` the gateway's and the
         * API's `/metrics` show the worker's metrics, one registry per process).
         */
        metricsPort: z.number().int().min(0).max(65_535).nullable().default(null),
        /** Interface the worker's metrics listener listens on. Default 127.0.0.1. */
        metricsHost: z.string().default('127.0.0.1'),
      })
      .prefault({}),
    /** The test reward (tasks/reward/). */
    reward: z
      .object({
        /**
         * The static screen of agents' diffs for every task (tasks/reward/screen/), applied
         * together with each task's own `reward.screen`: either turns it or a rule off.
         * Default: on, every rule.
         */
        screen: ScreenConfigSchema.prefault({}),
      })
      .strict()
      .prefault({}),
    /** The sandbox janitor (workers/janitor.ts). */
    janitor: z
      .object({
        /** A worker host not seen for this long is forgotten and no longer swept, ms. Default 3600000 (1 hour). */
        hostTtlMs: z
          .number()
          .int()
          .positive()
          .default(60 * 60 * 1000),
      })
      .prefault({}),
    /** Observability exports (telemetry/). */
    telemetry: z
      .object({
        /**
         * OTLP/HTTP base URL to send traces to (`http://127.0.0.1:4318`; spans go to
         * `<url>/v1/traces`): episode → turn → engine call, and sandbox commands. Default null:
         * tracing off, no SDK started.
         */
        otlpEndpoint: z.string().url().max(2048).nullable().default(null),
      })
      .strict()
      .prefault({}),
    admission: z
      .object({
        episodeTokens: z.number().int().positive().default(16_384),
        leaseTtlMs: z
          .number()
          .int()
          .positive()
          .default(10 * 60 * 1000),
      })
      .prefault({}),
    /** How the gateway places each generation on an engine (scheduler/router.ts). */
    routing: z
      .object({
        /**
         * Policy by name: `ours`, a baseline of the routing spec (round-robin, least-requests,
         * verl-sticky, sglang-cache-aware, llmd-weighted, dynamo-cost, uni-agent-kv-aware,
         * skyrl-sticky-least-loaded, prime-rl-cache-aware), or `home` (the episode's admission
         * instance while healthy). Default `ours`.
         */
        policy: z.enum(ROUTER_POLICY_NAMES).default(ROUTING_DEFAULTS.policy),
        /** The policy's thresholds by option name (e.g. `minFreeFraction` for `ours`). Default `{}`: its measured defaults. */
        policyOptions: z.record(z.string(), z.number()).default({}),
        /** Tokens per block of the prefix index. Default 64. */
        blockSize: z.number().int().positive().default(ROUTING_DEFAULTS.blockSize),
        /** Engines one generation may be sent to (the first included) when engines fail before answering. Default 3. */
        maxAttempts: z.number().int().positive().default(ROUTING_DEFAULTS.maxAttempts),
        /** Interval between health checks (`/health`) of every engine, ms. Default 2000. */
        healthIntervalMs: z.number().int().positive().default(ROUTING_DEFAULTS.healthIntervalMs),
        /** Consecutive failed health checks that take an engine out; timeouts alone never take out the last healthy one. Default 2. */
        unhealthyAfterFailures: z
          .number()
          .int()
          .positive()
          .default(ROUTING_DEFAULTS.unhealthyAfterFailures),
        /** Interval between metrics scrapes (`/metrics`), ms. Default 1000. */
        metricsIntervalMs: z.number().int().positive().default(ROUTING_DEFAULTS.metricsIntervalMs),
        /** Metrics older than this are ignored in favour of the router's own in-flight accounting, ms. Default 5000. */
        metricsMaxAgeMs: z.number().int().positive().default(ROUTING_DEFAULTS.metricsMaxAgeMs),
        /** Timeout of one health check or scrape, ms. Default 1000. */
        probeTimeoutMs: z.number().int().positive().default(ROUTING_DEFAULTS.probeTimeoutMs),
        /** A health check's timer this late found the event loop stalled: the check gets another `probeTimeoutMs` instead of failing, ms. Default 100. */
        probeStallMs: z.number().int().positive().default(ROUTING_DEFAULTS.probeStallMs),
        /** Times one health check is extended for a stalled event loop before its timeout counts. Default 5. */
        probeStallExtensions: z
          .number()
          .int()
          .min(0)
          .default(ROUTING_DEFAULTS.probeStallExtensions),
        /** A check or call timing out within this long of the engine's last data on a generation stream does not count, ms. Default 4000. */
        streamGraceMs: z.number().int().min(0).default(ROUTING_DEFAULTS.streamGraceMs),
        /** Token-level admission: calls that fit no engine's KV memory wait in the router. */
        admission: z
          .object({
            /** Whether the router holds calls that fit no engine's KV memory. Default true. */
            enabled: z.boolean().default(ROUTING_DEFAULTS.admission.enabled),
            /** Share of an engine's KV capacity its admitted chains' working sets may fill. Default 1. */
            fillFraction: z.number().positive().default(ROUTING_DEFAULTS.admission.fillFraction),
            /** Share of an engine's KV capacity a chain new to it must leave free for the growth of those there. Default 0.1. */
            arrivalHeadroom: z
              .number()
              .min(0)
              .max(1)
              .default(ROUTING_DEFAULTS.admission.arrivalHeadroom),
            /** Longest a chain with no call in flight keeps its memory reserved (its tool call), ms. Default 20000. */
            idleTtlMs: z.number().int().positive().default(ROUTING_DEFAULTS.admission.idleTtlMs),
            /** Quantile of the tool gaps seen for which an idle reservation is kept (at most idleTtlMs); 1 keeps it idleTtlMs. Default 0.8. */
            returnQuantile: z.number().gt(0).max(1).default(ROUTING_DEFAULTS.admission.returnQuantile),
            /** A held call is sent anyway after this long, ms; below agents' HTTP timeouts. Default 240000. */
            maxWaitMs: z.number().int().positive().default(ROUTING_DEFAULTS.admission.maxWaitMs),
          })
          .prefault({}),
        /**
         * How the router trusts the engines' own KV events; they are used for every engine with
         * `engines[].kvEvents` (or for events fed with `Router.applyKvEvents` once this is set).
         * Default: the values below whenever an engine publishes; absent and none publishing: off.
         */
        kvEvents: z
          .object({
            /** A feed the router expects events from and that is silent this long answers from the estimate, ms. Default 10000. */
            staleAfterMs: z.number().int().positive().default(KV_EVENT_DEFAULTS.staleAfterMs),
            /** Batches kept past a sequence gap while it is replayed; beyond, the feed waits for a rebuild. Default 1024. */
            maxBufferedBatches: z.number().int().positive().default(KV_EVENT_DEFAULTS.maxBufferedBatches),
          })
          .strict()
          .optional(),
      })
      .prefault({}),
  })
  .strict();
export type Config = z.infer<typeof ConfigSchema>;

/** The episode limits of `limits` (what travels in each episode's input): all but the worker's `gatewayOutageMs`. */
export function episodeLimits(config: Config): EpisodeLimits {
  const { gatewayOutageMs: _worker, ...episode } = config.limits;
  return episode;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Sets `a.b.c` to a value in a nested object (CLI flag overrides). */
function setPath(target: Record<string, unknown>, dotted: string, value: unknown): void {
  const keys = dotted.split('.');
  let node = target;
  for (const key of keys.slice(0, -1)) {
    const next = node[key];
    node = (next && typeof next === 'object' ? next : (node[key] = {})) as Record<string, unknown>;
  }
  node[keys[keys.length - 1]!] = value;
}

/** Environment variables that set configuration keys (secrets and the shared store's URL). */
export const CONFIG_ENV = {
  ROLLOUT_STORE_URL: 'store.url',
  ROLLOUT_GATEWAY_ADMIN_TOKEN: 'gateway.adminToken',
  ROLLOUT_API_TOKEN: 'api.token',
  TEMPORAL_API_KEY: 'temporal.apiKey',
} as const;

/**
 * Reads the file (when given), applies the environment (`CONFIG_ENV`) over it and `overrides`
 * (dotted keys, e.g. `batch.n`) over both, validates, and resolves `dataDir` against the working
 * directory.
 */
export async function loadConfig(
  file: string | undefined,
  overrides: Record<string, unknown> = {},
  env: NodeJS.ProcessEnv = process.env,
): Promise<Config> {
  let raw: Record<string, unknown> = {};
  if (file) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      throw new ConfigError(`cannot read config file ${file}: ${(error as Error).message}`);
    }
    try {
      raw = (YAML.parse(text) as Record<string, unknown> | null) ?? {};
    } catch (error) {
      throw new ConfigError(
        `config file ${file} is not valid YAML/JSON: ${(error as Error).message}`,
      );
    }
  }
  for (const [name, key] of Object.entries(CONFIG_ENV)) if (env[name]) setPath(raw, key, env[name]);
  for (const [key, value] of Object.entries(overrides))
    if (value !== undefined) setPath(raw, key, value);
  const parsed = ConfigSchema.safeParse(raw);
  if (!parsed.success)
    throw new ConfigError(
      `invalid configuration${file ? ` in ${file}` : ''}:\n${z.prettifyError(parsed.error)}`,
    );
  return { ...parsed.data, dataDir: path.resolve(parsed.data.dataDir) };
}
