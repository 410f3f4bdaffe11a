/**
 * The model judge's way to the configured engines: the same instances the gateway routes over
 * (stack config `engines`, or the simulated ones), called with the engine backend client
 * (gateway/backends) and the model's own codec, token ids in and out. Judge calls are not agent
 * turns, so they bypass gateway sessions and never become training chains; their record goes to
 * the artifact store (tasks/reward/judge/run.ts).
 *
 * Instances are tried in turn from a rotating start, healthy ones first; every one failing is
 * JudgeUnavailableError (retryable machinery failure).
 */
import { createBackend } from '../gateway/backends/index.js';
import type { BackendKind } from '../gateway/backends/backend.js';
import type { Codec } from '../gateway/codec/index.js';
import { SAMPLING_DEFAULTS } from '../gateway/sampling-schema.js';
import {
  JudgeConfigError,
  JudgeUnavailableError,
  type JudgeCallRequest,
  type JudgeCallResult,
  type JudgeEngine,
} from '../tasks/reward/index.js';

export interface EngineJudgeOptions {
  codec: Codec;
  instances: readonly { name: string; kind: BackendKind; url: string }[];
  /** The model the engines serve (`model.name`). */
  modelName: string;
  /** Whether an engine may take work now (the worker's health view). Default: every engine. */
  isAvailable?: (instance: string) => boolean;
  /** Wall time of one engine request, ms. Default 120000. */
  timeoutMs?: number;
}

export function createEngineJudge(options: EngineJudgeOptions): JudgeEngine {
  const { codec, modelName } = options;
  const backends = options.instances.map((i) => ({
    name: i.name,
    backend: createBackend(i, modelName),
  }));
  let next = 0;
  return {
    async complete(request: JudgeCallRequest): Promise<JudgeCallResult> {
      if (request.model !== undefined && request.model !== modelName)
        throw new JudgeConfigError(
          `the judge model ${request.model} is not served by the configured engines (they serve ${modelName})`,
        );
      if (backends.length === 0)
        throw new JudgeUnavailableError('no engines are configured for the judge');
      const promptIds = await codec.encoder.encodeFirst(request.messages, undefined);
      const start = next++ % backends.length;
      const rotated = [...backends.slice(start), ...backends.slice(0, start)];
      const healthy = (name: string) => options.isAvailable?.(name) ?? true;
      const order = [
        ...rotated.filter((b) => healthy(b.name)),
        ...rotated.filter((b) => !healthy(b.name)),
      ];
      const failures: string[] = [];
      for (const { name, backend } of order) {
        const startedAt = performance.now();
        try {
          const out = await backend.generate({
            promptIds,
            maxTokens: request.maxTokens,
            temperature: request.temperature,
            // Untruncated, unpenalised: the judge's temperature is its only sampling knob.
            topP: SAMPLING_DEFAULTS.topP,
            topK: SAMPLING_DEFAULTS.topK,
            minP: SAMPLING_DEFAULTS.minP,
            presencePenalty: SAMPLING_DEFAULTS.presencePenalty,
            frequencyPenalty: SAMPLING_DEFAULTS.frequencyPenalty,
            repetitionPenalty: SAMPLING_DEFAULTS.repetitionPenalty,
            signal: AbortSignal.timeout(options.timeoutMs ?? 120_000),
          });
          if (out.finishReason === 'abort') {
            failures.push(`${name}: aborted`);
            continue;
          }
          const sampled =
            out.ids.at(-1) === codec.encoder.endOfTurnId ? out.ids.slice(0, -1) : out.ids;
          const turn = codec.parseTurn(codec.tokenizer.decode(sampled));
          return {
            model: modelName,
            instance: name,
            text: turn.content,
            reasoning: turn.reasoning ?? '',
            finishReason: out.finishReason,
            promptIds,
            ids: out.ids,
            promptTokens: out.promptTokens,
            completionTokens: out.ids.length,
            cachedTokens: out.cachedTokens,
            engineMs: Math.round(performance.now() - startedAt),
          };
        } catch (error) {
          failures.push(`${name}: ${(error as Error).message}`);
        }
      }
      throw new JudgeUnavailableError(`no engine answered the judge: ${failures.join('; ')}`);
    },
  };
}
