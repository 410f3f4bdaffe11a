/** Every routing policy of the spec behind one constructor, chosen by name in configuration. */
import type { RoutingPolicy } from '../types.js';
import { DynamoCostPolicy, type DynamoCostOptions } from './dynamo-cost.js';
import { LeastRequestsPolicy } from './least-requests.js';
import { LlmdWeightedPolicy, type LlmdWeightedOptions } from './llmd-weighted.js';
import { OursPolicy, type OursOptions } from './ours.js';
import { PrimeRlCacheAwarePolicy, type PrimeRlCacheAwareOptions } from './prime-rl-cache-aware.js';
import { RoundRobinPolicy } from './round-robin.js';
import { SglangCacheAwarePolicy, type SglangCacheAwareOptions } from './sglang-cache-aware.js';
import { SkyrlStickyLeastLoadedPolicy } from './skyrl-sticky-least-loaded.js';
import { UniAgentKvAwarePolicy, type UniAgentKvAwareOptions } from './uni-agent-kv-aware.js';
import { VerlStickyPolicy, type VerlStickyOptions } from './verl-sticky.js';

export type { DynamoCostOptions, LlmdWeightedOptions, OursOptions, PrimeRlCacheAwareOptions, SglangCacheAwareOptions, UniAgentKvAwareOptions, VerlStickyOptions };
export {
  DynamoCostPolicy,
  LeastRequestsPolicy,
  LlmdWeightedPolicy,
  OursPolicy,
  PrimeRlCacheAwarePolicy,
  RoundRobinPolicy,
  SglangCacheAwarePolicy,
  SkyrlStickyLeastLoadedPolicy,
  UniAgentKvAwarePolicy,
  VerlStickyPolicy,
};

/** Options each policy accepts, by name. */
export interface PolicyOptionsByName {
  'round-robin': Record<string, never>;
  'least-requests': Record<string, never>;
  'verl-sticky': VerlStickyOptions;
  'sglang-cache-aware': SglangCacheAwareOptions;
  'llmd-weighted': LlmdWeightedOptions;
  'dynamo-cost': DynamoCostOptions;
  'uni-agent-kv-aware': UniAgentKvAwareOptions;
  'skyrl-sticky-least-loaded': Record<string, never>;
  'prime-rl-cache-aware': PrimeRlCacheAwareOptions;
  ours: OursOptions;
}

export type PolicyName = keyof PolicyOptionsByName;

/** Every policy name, baselines first. */
export const POLICY_NAMES: readonly PolicyName[] = [
  'round-robin',
  'least-requests',
  'verl-sticky',
  'sglang-cache-aware',
  'llmd-weighted',
  'dynamo-cost',
  'uni-agent-kv-aware',
  'skyrl-sticky-least-loaded',
  'prime-rl-cache-aware',
  'ours',
];

export function isPolicyName(name: string): name is PolicyName {
  return (POLICY_NAMES as readonly string[]).includes(name);
}

/** A fresh policy (policies keep per-chain state: one per router). */
export function createPolicy<N extends PolicyName>(name: N, options: PolicyOptionsByName[N] = {} as PolicyOptionsByName[N]): RoutingPolicy {
  switch (name) {
    case 'round-robin':
      return new RoundRobinPolicy();
    case 'least-requests':
      return new LeastRequestsPolicy();
    case 'verl-sticky':
      return new VerlStickyPolicy(options as VerlStickyOptions);
    case 'sglang-cache-aware':
      return new SglangCacheAwarePolicy(options as SglangCacheAwareOptions);
    case 'llmd-weighted':
      return new LlmdWeightedPolicy(options as LlmdWeightedOptions);
    case 'dynamo-cost':
      return new DynamoCostPolicy(options as DynamoCostOptions);
    case 'uni-agent-kv-aware':
      return new UniAgentKvAwarePolicy(options as UniAgentKvAwareOptions);
    case 'skyrl-sticky-least-loaded':
      return new SkyrlStickyLeastLoadedPolicy();
    case 'prime-rl-cache-aware':
      return new PrimeRlCacheAwarePolicy(options as PrimeRlCacheAwareOptions);
    case 'ours':
      return new OursPolicy(options as OursOptions);
    default:
      throw new Error(`unknown routing policy: ${String(name)}`);
  }
}
