import { z } from 'zod';
import type { BackendKind } from './backend.js';

/** What an engine reports about itself at start-up; a field is undefined where it reports none. */
export interface EngineInfo {
  /** Ids of the models it serves (`/v1/models`). */
  models: string[];
  /** Its context length: prompt plus sampled tokens of one request (`max_model_len`). */
  maxModelLen: number | undefined;
  /** Tokens its KV cache holds (vLLM: `num_gpu_blocks` x `block_size`; SGLang: `max_total_num_tokens`). */
  kvCapacityTokens: number | undefined;
}

/** The engine could not be asked (refused, timed out, an error answer to `/v1/models`). */
export class EngineUnreachableError extends Error {
  override name = 'EngineUnreachableError';
}

const Count = z.number().int().positive();

/** vLLM's and SGLang's `/v1/models`: both list `max_model_len` per model (older versions may not). */
const ModelsSchema = z.object({
  data: z.array(z.object({ id: z.string(), max_model_len: Count.nullish() })),
});

/** SGLang's `/get_server_info`: `max_total_num_tokens` at the top (older) or per scheduler in `internal_states`. */
const SglangServerInfoSchema = z.object({
  max_total_num_tokens: Count.nullish(),
  internal_states: z.array(z.object({ max_total_num_tokens: Count.nullish() }).passthrough()).nullish(),
});

/** `GET url` as JSON under `timeoutMs`; undefined for an error answer or an unreadable body. */
async function getJson(url: string, timeoutMs: number): Promise<unknown> {
  const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  const text = await response.text();
  if (!response.ok) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * vLLM's KV capacity from its `vllm:cache_config_info` info gauge, whose labels carry the cache
 * configuration (`num_gpu_blocks`, `block_size`); undefined when the metric or a label is missing.
 */
export function vllmKvCapacity(metricsText: string): number | undefined {
  const line = metricsText.split('\n').find((l) => l.startsWith('vllm:cache_config_info{'));
  if (!line) return undefined;
  const label = (name: string) => Number(new RegExp(`[{,]${name}="(\\d+)"`).exec(line)?.[1]);
  const capacity = label('num_gpu_blocks') * label('block_size');
  return Number.isInteger(capacity) && capacity > 0 ? capacity : undefined;
}

async function kvCapacity(kind: BackendKind, url: string, timeoutMs: number): Promise<number | undefined> {
  if (kind === 'vllm') {
    const response = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
    const text = await response.text();
    return response.ok ? vllmKvCapacity(text) : undefined;
  }
  const info = SglangServerInfoSchema.safeParse(await getJson(`${url}/get_server_info`, timeoutMs));
  if (!info.success) return undefined;
  return info.data.max_total_num_tokens ?? info.data.internal_states?.[0]?.max_total_num_tokens ?? undefined;
}

/**
 * Asks the engine at `url` what it serves and its limits: `/v1/models`, then its KV capacity. An
 * engine that cannot be asked is an `EngineUnreachableError`; a limit it does not report is undefined.
 */
export async function readEngineInfo(engine: { kind: BackendKind; url: string }, modelName: string, timeoutMs: number): Promise<EngineInfo> {
  let models: z.infer<typeof ModelsSchema>;
  try {
    const parsed = ModelsSchema.safeParse(await getJson(`${engine.url}/v1/models`, timeoutMs));
    if (!parsed.success) throw new EngineUnreachableError(`${engine.url}/v1/models gave no model list`);
    models = parsed.data;
  } catch (error) {
    if (error instanceof EngineUnreachableError) throw error;
    throw new EngineUnreachableError(`${engine.url}/v1/models: ${(error as Error).message}`, { cause: error });
  }
  const served = models.data.find((m) => m.id === modelName);
  let capacity: number | undefined;
  try {
    capacity = await kvCapacity(engine.kind, engine.url, timeoutMs);
  } catch {
    // The model list answered: an engine without metrics still serves, with a configured capacity.
    capacity = undefined;
  }
  return { models: models.data.map((m) => m.id), maxModelLen: served?.max_model_len ?? undefined, kvCapacityTokens: capacity };
}
