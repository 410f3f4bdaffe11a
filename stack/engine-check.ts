import { EngineUnreachableError, readEngineInfo } from '../gateway/backends/engine-info.js';
import type { InstanceConfig } from '../scheduler/index.js';

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
 * gateway, and the router takes them in when their health checks pass.
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
        return { ...engine, ...(kvCapacityTokens === undefined ? {} : { kvCapacityTokens }), ...(info.maxModelLen === undefined ? {} : { maxModelLen: info.maxModelLen }) };
      } catch (error) {
        if (!(error instanceof EngineUnreachableError)) throw error;
        log(`engine ${engine.name}: not reachable at start (${error.message}); its model name and limits are not checked`);
        return { ...engine };
      }
    }),
  );
}
