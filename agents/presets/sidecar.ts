/**
 * The agent sidecar: programs installed by `scripts/install-agents.sh` under `.tools/agents` on
 * the host, mounted read-only at `AGENTS_SANDBOX_DIR` in a black-box agent's sandbox (never copied
 * into the task's files), together with the gateway bridge's forwarder.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { forwarderMount } from '../../sandbox/bridge.js';

export const AGENTS_SANDBOX_DIR = '/opt/agents';

/** `.tools/agents` of this checkout. */
export const DEFAULT_AGENTS_HOST_DIR = fileURLToPath(
  new URL('../../.tools/agents', import.meta.url),
);

/** The read-only mounts a black-box agent's sandbox needs (`SandboxSpec.readOnlyMounts`). */
export function agentSidecarMounts(
  agentsHostDir: string = DEFAULT_AGENTS_HOST_DIR,
): { hostPath: string; sandboxPath: string }[] {
  return [{ hostPath: agentsHostDir, sandboxPath: AGENTS_SANDBOX_DIR }, forwarderMount()];
}

/** Whether the install script has put `relativePath` (e.g. `venv/bin/python`) in place. */
export function sidecarHas(
  relativePath: string,
  agentsHostDir: string = DEFAULT_AGENTS_HOST_DIR,
): boolean {
  return existsSync(join(agentsHostDir, relativePath));
}
