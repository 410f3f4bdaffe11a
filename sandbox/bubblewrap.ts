/**
 * The local sandbox provider with bubblewrap isolation: the host-side lifecycle of
 * `local-provider.ts` (records, TTL, quota, cgroups, the image root and the workspace layers on
 * the host) running every exec with `BubblewrapRunner` (`bwrap-runner.ts`).
 */
import { BubblewrapRunner, type BubblewrapRunnerOptions } from './bwrap-runner.js';
import { LocalSandboxProvider, type LocalSandboxProviderOptions } from './local-provider.js';

export { DEFAULT_LIMITS, defaultMountRoot } from './local-provider.js';

export type BubblewrapProviderOptions = LocalSandboxProviderOptions & BubblewrapRunnerOptions;

export class BubblewrapProvider extends LocalSandboxProvider {
  constructor(options: BubblewrapProviderOptions) {
    super(options, new BubblewrapRunner(options));
  }
}
