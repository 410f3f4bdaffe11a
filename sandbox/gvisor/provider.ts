/**
 * The local sandbox provider with gVisor isolation: the host-side lifecycle of
 * `../local-provider.ts` (records, TTL, quota, cgroups, the image root and the workspace layers on
 * the host), shared with bubblewrap, running every exec with `GVisorRunner` (`runner.ts`): the
 * same images and layers, each command under its own user-space kernel.
 */
import { LocalSandboxProvider, type LocalSandboxProviderOptions } from '../local-provider.js';
import { SandboxError, type SandboxInfo, type SandboxSpec } from '../provider.js';
import { GVisorRunner, type GVisorRunnerOptions } from './runner.js';

export type GVisorProviderOptions = LocalSandboxProviderOptions & GVisorRunnerOptions;

/**
 * gVisor on a host without a writable cgroup hierarchy: the `prlimit` fallback caps address
 * space, and the Sentry (a Go program that reserves far more address space than it uses) cannot
 * even start under it. Not retryable: the host must change.
 */
export class GVisorNeedsCgroupsError extends SandboxError {
  override name = 'GVisorNeedsCgroupsError';
  constructor() {
    super('the gvisor provider needs a writable cgroup hierarchy (v1 or v2); this host has none', false);
  }
}

export class GVisorProvider extends LocalSandboxProvider {
  constructor(options: GVisorProviderOptions) {
    super(options, new GVisorRunner(options));
  }

  override async create(spec: SandboxSpec): Promise<SandboxInfo> {
    if ((await this.resourceControl()) === 'prlimit') throw new GVisorNeedsCgroupsError();
    return super.create(spec);
  }
}
