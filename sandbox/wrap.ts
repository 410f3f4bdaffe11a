import type { SandboxProvider } from './provider.js';

/** The operations a wrapper may take over. */
export type WrappedOperations = Partial<Pick<SandboxProvider, 'create' | 'exec' | 'destroy'>>;

/**
 * `provider` with some of its operations replaced (timed, traced); every other member is the
 * provider's own, called on the provider (its private state).
 */
export function wrapSandbox(provider: SandboxProvider, operations: WrappedOperations): SandboxProvider {
  return new Proxy(provider, {
    get(target, key) {
      if (key in operations) return operations[key as keyof WrappedOperations];
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
