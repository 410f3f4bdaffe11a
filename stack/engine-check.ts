import { EngineUnreachableError, readEngineInfo } from '../gateway/backends/engine-info.js';
import type { InstanceConfig } from '../scheduler/index.js';
import { discoverKvEventSource } from '../scheduler/kv-events/discovery.js';

/** The configured model is not among those an engine serves: every request to it would be a 404. */
export class EngineModelError extends Error {
  override name = 'EngineModelError';
}

/** An engine as configured, and what it reported at start-up. */
export type CheckedEngine = InstanceConfig & {
  /** The engine's context length (prompt + max_tokens of one request); undefined where it reports none. */
  maxModelLen?: number;
};

/** How long one engine has to answer each start-up question, ms. */
const ENGINE_CHECK_TIMEOUT_MS = 5_000;

/**
 * Asks every engine what it serves before the gateway routes to it: a model name it does not
 * serve is an `EngineModelError` naming the served ones; its `max_model_len` is kept, and its KV
 * capacity fills a `kvCapacityTokens` the configuration leaves unset (a configured one wins). An
 * engine down at start is logged and kept as configured, unchecked: engines may come up after the
 * gateway, and the router takes them in when their health checks pass. An engine configured for
 * KV events without a publisher address is asked for it (`GET /kv_event_sources`); if it names
 * none, that is logged and the router estimates its cache instead.
 */
export async function checkEngines(engines: readonly InstanceConfig[], modelName: string, log: (line: string) => void): Promise<CheckedEngine[]> {
  return Promise.all(
    engines.map(async (engine): Promise<CheckedEngine> => {
      try {
        const info = await readEngineInfo(engine, modelName, ENGINE_CHECK_TIMEOUT_MS);
        if (!info.models.includes(modelName))
          throw new EngineModelError(
            `engine ${engine.name} (${engine.url}) does not serve model.name ${JSON.stringify(modelName)}; it serves ${info.models.map((m) => JSON.stringify(m)).join(', ') || 'no model'}`,
          );
        const kvCapacityTokens = engine.kvCapacityTokens ?? info.kvCapacityTokens;
        const { kvEvents, ...rest } = engine;
        const events = kvEvents && !kvEvents.endpoint ? await askKvEvents(engine, log) : kvEvents;
        return {
          ...rest,
          ...(kvCapacityTokens === undefined ? {} : { kvCapacityTokens }),
          ...(info.maxModelLen === undefined ? {} : { maxModelLen: info.maxModelLen }),
          ...(events === undefined ? {} : { kvEvents: events }),
        };
      } catch (error) {
        if (!(error instanceof EngineUnreachableError)) throw error;
        log(`engine ${engine.name}: not reachable at start (${error.message}); its model name and limits are not checked`);
        return { ...engine };
      }
    }),
  );
}

/** The engine's own account of its KV-event publisher, with the configured topic if one is set; undefined (logged) when it gives none. */
async function askKvEvents(engine: InstanceConfig, log: (line: string) => void): Promise<InstanceConfig['kvEvents']> {
  try {
    const found = await discoverKvEventSource(engine.url, ENGINE_CHECK_TIMEOUT_MS);
    return { ...found, ...(engine.kvEvents?.topic === undefined ? {} : { topic: engine.kvEvents.topic }) };
  } catch (error) {
    log(`engine ${engine.name}: its KV events are not used (${(error as Error).message}); the router estimates its cache`);
    return undefined;
  }
}
