export { AdmissionControl, type AdmissionOptions, type InstanceLoad, type Lease } from './admission.js';
export type { InstanceConfig } from './instances.js';
