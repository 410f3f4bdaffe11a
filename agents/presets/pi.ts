/**
 * pi (npm `@mariozechner/pi-coding-agent`, `pi -p --mode json`): OpenAI Chat Completions against
 * the gateway's `/v1/chat/completions` through a custom provider in its `models.json`, run on the
 * sidecar's own Node runtime (the image may have no node). Start-up network operations (update
 * checks, package installs) and install telemetry are off, and no extension, skill, prompt
 * template or context file is loaded, so the task repo cannot reconfigure it.
 */
import { BRIDGE_NODE } from '../../sandbox/bridge.js';
import { compactionTokenLimit } from './limits.js';
import { countJsonEvents } from './json-events.js';
import { AGENTS_SANDBOX_DIR } from './sidecar.js';
import { BASE_ENV, type AgentPreset, type AgentRunContext } from './types.js';

const AGENT_DIR = '/tmp/.pi/agent';
const PROVIDER = 'gateway';
/** `models.json` names the variable that holds the key; the key stays out of the file. */
const API_KEY_ENV = 'ROLLOUT_API_KEY';
/** pi's default of tokens kept verbatim when it compacts. */
const KEEP_RECENT_TOKENS = 20_000;

function models(ctx: AgentRunContext): string {
  return JSON.stringify(
    {
      providers: {
        [PROVIDER]: {
          baseUrl: `${ctx.baseUrl}/v1`,
          api: 'openai-completions',
          apiKey: API_KEY_ENV,
          // The gateway samples the policy as configured: no effort to ask for.
          compat: { supportsReasoningEffort: false },
          models: [
            {
              id: ctx.model,
              name: ctx.model,
              reasoning: true,
              input: ['text'],
              contextWindow: ctx.maxContextTokens,
              maxTokens: 8192,
              cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
            },
          ],
        },
      },
    },
    null,
    2,
  );
}

function settings(ctx: AgentRunContext): string {
  const compactAt = compactionTokenLimit(ctx.maxContextTokens);
  return JSON.stringify(
    {
      defaultProvider: PROVIDER,
      defaultModel: ctx.model,
      quietStartup: true,
      enableInstallTelemetry: false,
      // pi compacts when the context passes `contextWindow - reserveTokens`.
      compaction: {
        enabled: true,
        reserveTokens: ctx.maxContextTokens - compactAt,
        keepRecentTokens: Math.min(KEEP_RECENT_TOKENS, Math.floor(compactAt / 2)),
      },
    },
    null,
    2,
  );
}

/** One `--mode json` event line; a turn is one assistant message and its tool results. */

export const pi: AgentPreset = {
  name: 'pi',
  command: (ctx) => [
    ...BRIDGE_NODE,
    `${AGENTS_SANDBOX_DIR}/npm/node_modules/@mariozechner/pi-coding-agent/dist/cli.js`,
    '--print',
    '--mode',
    'json',
    '--provider',
    PROVIDER,
    '--model',
    ctx.model,
    '--no-session',
    '--no-extensions',
    '--no-skills',
    '--no-prompt-templates',
    '--no-themes',
    '--no-context-files',
    ctx.prompt,
  ],
  env: (ctx) => ({
    ...BASE_ENV,
    PI_CODING_AGENT_DIR: AGENT_DIR,
    PI_OFFLINE: '1',
    PI_TELEMETRY: '0',
    [API_KEY_ENV]: ctx.apiKey,
  }),
  configFiles: (ctx) => [
    { path: `${AGENT_DIR}/models.json`, content: models(ctx) },
    { path: `${AGENT_DIR}/settings.json`, content: settings(ctx) },
  ],
  defaultTimeoutMs: 30 * 60_000,
  turns: ({ stdout }) => countJsonEvents(stdout, 'turn_end'),
};
