export { AdmissionControl, type AdmissionOptions, type InstanceLoad, type Lease, type LeaseBook } from './admission.js';
export type { InstanceConfig } from './instances.js';
export { InstanceRegistry, REGISTRY_DEFAULTS, type InFlightCall, type RegisteredInstance, type RegistryOptions } from './registry.js';
export { parsePrometheusText, readEngineMetrics, scrapeEngineMetrics, type EngineMetrics } from './metrics-scraper.js';
export {
  Router,
  createRouter,
  ROUTING_DEFAULTS,
  ROUTER_POLICY_NAMES,
  type RouterPolicyName,
  type Placement,
  type PrefixIndexUpdates,
  type RouteCall,
  type RouterOptions,
  type RouterPrefixIndex,
  type RoutingOptions,
} from './router.js';
export { HomePolicy } from './home-policy.js';
