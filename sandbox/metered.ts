import type { SandboxMetrics, SandboxOperation } from '../telemetry/metrics.js';
import type { SandboxProvider } from './provider.js';

async function timed<T>(metrics: SandboxMetrics, operation: SandboxOperation, run: () => Promise<T>): Promise<T> {
  const started = performance.now();
  let failed = true;
  try {
    const result = await run();
    failed = false;
    return result;
  } finally {
    metrics.observe(operation, performance.now() - started, failed);
  }
}

/**
 * `provider` with its create, exec and destroy timed and their failures counted: the one seam
 * every provider's operations pass through (the worker wraps its provider once).
 */
export function meteredSandbox(provider: SandboxProvider, metrics: SandboxMetrics): SandboxProvider {
  const wrapped: Pick<SandboxProvider, SandboxOperation> = {
    create: (spec) => timed(metrics, 'create', () => provider.create(spec)),
    exec: (id, command, options) => timed(metrics, 'exec', () => provider.exec(id, command, options)),
    destroy: (id) => timed(metrics, 'destroy', () => provider.destroy(id)),
  };
  // Every other member is the provider's own, called on the provider (its private state).
  return new Proxy(provider, {
    get(target, key) {
      if (key === 'create' || key === 'exec' || key === 'destroy') return wrapped[key];
      const value: unknown = Reflect.get(target, key);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
