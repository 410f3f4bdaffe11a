// The drift worker thread's entry: a thread does not inherit the tsx loader the CLI registers, so
// it registers it itself before loading the TypeScript body.
import { register } from 'tsx/esm/api';

register();
await import('./drift-worker.ts');
