import { InstanceRegistry, type InstanceConfig } from '../scheduler/index.js';
import type { Config } from './config.js';

/** Whether an engine may take new episodes now, and the end of the checks behind it. */
export interface EngineHealth {
  isAvailable(instance: string): boolean;
  stop(): Promise<void>;
}

/**
 * A worker's own view of engine health, for admission when no gateway runs in its process: an
 * `InstanceRegistry` fed by `/health` checks only (metrics are the router's business). It settles
 * before it answers, so a worker never admits an episode to an engine that was dead at start.
 */
export async function startEngineHealth(engines: InstanceConfig[], routing: Config['routing']): Promise<EngineHealth> {
  const registry = new InstanceRegistry(engines, {
    healthIntervalMs: routing.healthIntervalMs,
    unhealthyAfterFailures: routing.unhealthyAfterFailures,
    probeTimeoutMs: routing.probeTimeoutMs,
    probeStallMs: routing.probeStallMs,
    probeStallExtensions: routing.probeStallExtensions,
  });
  const checkAll = () => Promise.all(registry.names.map((name) => registry.checkHealth(name)));
  // Instances start healthy and go out after this many failed checks in a row.
  for (let i = 0; i < routing.unhealthyAfterFailures; i++) await checkAll();
  const timer = setInterval(() => void checkAll(), routing.healthIntervalMs);
  timer.unref();
  return {
    isAvailable: (instance) => registry.isHealthy(instance),
    async stop() {
      clearInterval(timer);
      await registry.close();
    },
  };
}
