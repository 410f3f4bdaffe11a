import { BubblewrapProvider } from './bubblewrap.js';
import { FaultInjectingProvider } from './fault-injection.js';
import { GVisorProvider } from './gvisor/provider.js';
import type { ImageStore } from './images/types.js';
import type { SandboxLimits, SandboxProvider } from './provider.js';

export * from './provider.js';
export {
  BubblewrapProvider,
  DEFAULT_LIMITS,
  defaultMountRoot,
  type BubblewrapProviderOptions,
} from './bubblewrap.js';
export {
  GVisorNeedsCgroupsError,
  GVisorProvider,
  type GVisorProviderOptions,
} from './gvisor/provider.js';
export { LocalSandboxProvider, type LocalSandboxProviderOptions } from './local-provider.js';
export type { RunRequest, SandboxBind, SandboxRunner, SandboxUser } from './runner.js';
export { BubblewrapRunner, type BubblewrapRunnerOptions } from './bwrap-runner.js';
export { BaseImageOnlyStore } from './images/base-only.js';
export { FreezerUnavailableError, type ResourceControlKind } from './cgroups.js';
export { DENIED_SYSCALLS_X86_64 } from './seccomp.js';
export { FaultInjectingProvider, type FaultInjectionOptions } from './fault-injection.js';
export { SandboxFileError, uploadTarViaExec, downloadTarViaExec } from './files.js';

export interface SandboxProviderConfig {
  /**
   * The isolation: `bubblewrap` (namespaces and a seccomp filter on the host kernel) or `gvisor`
   * (each command under its own user-space kernel, `runsc`). Both share the host-side lifecycle
   * and the images. Required.
   */
  provider: 'bubblewrap' | 'gvisor';
  /** Host directory holding the sandboxes, e.g. `<dataDir>/sandboxes`. Required. */
  rootDir: string;
  /**
   * Host paths masked in every sandbox wherever a read-only mount shows them (the data dir, the
   * project); the root is an image, so nothing else of the host is visible. Default: none.
   */
  hiddenPaths?: string[];
  /** Where sandbox images come from. Default: the base image only (`BaseImageOnlyStore`). */
  images?: ImageStore;
  /** Probability (0..1) that `create` fails on purpose; > 0 wraps the provider. Default 0. */
  createFailureRate?: number;
  /** Seed of the fault injection. Default 0. */
  seed?: number;
  /** Most sandboxes on this host. Default 1000. */
  maxSandboxes?: number;
  /** TTL when a spec gives none. Default 1 hour. */
  defaultTtlMs?: number;
  /** Limits when a spec gives none; see SandboxLimits for each default. */
  defaultLimits?: SandboxLimits;
}

export function createSandboxProvider(config: SandboxProviderConfig): SandboxProvider {
  const options = {
    rootDir: config.rootDir,
    hiddenPaths: config.hiddenPaths,
    images: config.images,
    maxSandboxes: config.maxSandboxes,
    defaultTtlMs: config.defaultTtlMs,
    defaultLimits: config.defaultLimits,
  };
  const provider =
    config.provider === 'gvisor' ? new GVisorProvider(options) : new BubblewrapProvider(options);
  const rate = config.createFailureRate ?? 0;
  return rate > 0
    ? new FaultInjectingProvider(provider, { createFailureRate: rate, seed: config.seed })
    : provider;
}
