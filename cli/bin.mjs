#!/usr/bin/env node
// The `rollout` command: runs the TypeScript sources through tsx, so there is no build step.
import { register } from 'tsx/esm/api';

register();
await import('./main.ts');
