/** The registry of black-box agent presets, by the agent name an episode names. */
import { claudeCode } from './claude-code.js';
import { codex } from './codex.js';
import { miniSweAgent } from './mini-swe-agent.js';
import { opencode } from './opencode.js';
import { pi } from './pi.js';
import type { AgentPreset } from './types.js';

export * from './types.js';
export {
  AGENTS_SANDBOX_DIR,
  DEFAULT_AGENTS_HOST_DIR,
  agentSidecarMounts,
  sidecarHas,
} from './sidecar.js';

export class UnknownAgentError extends Error {
  override name = 'UnknownAgentError';
  constructor(agentName: string) {
    super(
      `no black-box agent preset named ${agentName} (known: ${Object.keys(PRESETS).join(', ')})`,
    );
  }
}

const PRESETS: Record<string, AgentPreset> = Object.fromEntries(
  [miniSweAgent, opencode, claudeCode, codex, pi].map((p) => [p.name, p]),
);

export function isBlackBoxAgent(agentName: string): boolean {
  return Object.hasOwn(PRESETS, agentName);
}

export function getAgentPreset(agentName: string): AgentPreset {
  const preset = PRESETS[agentName];
  if (!preset) throw new UnknownAgentError(agentName);
  return preset;
}

export function blackBoxAgentNames(): string[] {
  return Object.keys(PRESETS);
}
