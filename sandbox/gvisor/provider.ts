/**
 * The local sandbox provider with gVisor isolation: the host-side lifecycle of
 * `../local-provider.ts` (records, TTL, quota, cgroups, the image root and the workspace layers on
 * the host), shared with bubblewrap, running every exec with `GVisorRunner` (`runner.ts`): the
 * same images and layers, each command under its own user-space kernel.
 */
import { LocalSandboxProvider, type LocalSandboxProviderOptions } from '../local-provider.js';
import { GVisorRunner, type GVisorRunnerOptions } from './runner.js';

export type GVisorProviderOptions = LocalSandboxProviderOptions & GVisorRunnerOptions;

export class GVisorProvider extends LocalSandboxProvider {
  constructor(options: GVisorProviderOptions) {
    super(options, new GVisorRunner(options));
  }
}
