/**
 * The sandbox providers the attack suite runs against, one factory each. A provider of another
 * isolation level joins the suite by adding its factory here.
 */
import { BubblewrapProvider } from '../../sandbox/bubblewrap.js';
import { GVisorProvider } from '../../sandbox/gvisor/provider.js';
import type {
  LocalSandboxProvider,
  LocalSandboxProviderOptions,
} from '../../sandbox/local-provider.js';

/** What an attack may ask of the provider it is run against, besides the root directory. */
export type ProviderOptions = Partial<LocalSandboxProviderOptions> & {
  /** Turn the runner's own syscall filter off (an attack on what is left without it; gVisor has none). */
  seccomp?: boolean;
};

export interface ProviderFactory {
  /** The provider's name, as `SandboxProvider.name` reports it. */
  name: string;
  make(options: ProviderOptions & { rootDir: string }): LocalSandboxProvider;
}

export const PROVIDER_FACTORIES: ProviderFactory[] = [
  { name: 'bubblewrap', make: (options) => new BubblewrapProvider(options) },
  { name: 'gvisor', make: (options) => new GVisorProvider(options) },
];
