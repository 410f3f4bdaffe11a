import type { SandboxMetrics, SandboxOperation } from '../telemetry/metrics.js';
import type { SandboxProvider } from './provider.js';
import { wrapSandbox } from './wrap.js';

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
  return wrapSandbox(provider, {
    create: (spec) => timed(metrics, 'create', () => provider.create(spec)),
    exec: (id, command, options) => timed(metrics, 'exec', () => provider.exec(id, command, options)),
    destroy: (id) => timed(metrics, 'destroy', () => provider.destroy(id)),
  });
}
