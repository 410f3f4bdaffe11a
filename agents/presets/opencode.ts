/**
 * OpenCode (npm `opencode-ai`, `opencode run`): Chat Completions through the AI SDK's bundled
 * `@ai-sdk/openai-compatible` provider, streamed, with the session title asked for in a separate
 * request. Everything that would reach the internet (models.dev, plugins from npm, LSP downloads,
 * updates, sharing) is switched off, so only the bridge is ever contacted.
 */
import { countJsonEvents } from './json-events.js';
import { AGENTS_SANDBOX_DIR } from './sidecar.js';
import { BASE_ENV, type AgentPreset, type AgentRunContext } from './types.js';

const CONFIG_FILE = '/tmp/.config/opencode/opencode.json';
const PROVIDER = 'gateway';

function config(ctx: AgentRunContext): string {
  return JSON.stringify(
    {
      provider: {
        [PROVIDER]: {
          npm: '@ai-sdk/openai-compatible',
          name: 'agent-rollout gateway',
          options: { baseURL: `${ctx.baseUrl}/v1`, apiKey: ctx.apiKey },
          models: {
            [ctx.model]: {
              name: ctx.model,
              tool_call: true,
              reasoning: true,
              limit: { context: ctx.maxContextTokens, output: 8192 },
            },
          },
        },
      },
      model: `${PROVIDER}/${ctx.model}`,
      small_model: `${PROVIDER}/${ctx.model}`,
      enabled_providers: [PROVIDER],
      autoupdate: false,
      share: 'disabled',
      lsp: false,
      formatter: false,
      permission: { '*': 'allow' },
    },
    null,
    2,
  );
}

/** One `--format json` event line; only finished steps are counted. */

export const opencode: AgentPreset = {
  name: 'opencode',
  command: (ctx) => [
    `${AGENTS_SANDBOX_DIR}/npm/node_modules/.bin/opencode`,
    'run',
    '--pure',
    '--auto',
    '--format',
    'json',
    '--model',
    `${PROVIDER}/${ctx.model}`,
    ctx.prompt,
  ],
  env: () => ({
    ...BASE_ENV,
    OPENCODE_CONFIG: CONFIG_FILE,
    OPENCODE_DISABLE_PROJECT_CONFIG: '1', // the task repo must not reconfigure the agent
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    OPENCODE_DISABLE_MODELS_FETCH: '1',
    OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
    OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
    OPENCODE_DISABLE_SHARE: '1',
    OPENCODE_DISABLE_CLAUDE_CODE: '1', // no ~/.claude prompts or skills
    OPENCODE_DISABLE_EXTERNAL_SKILLS: '1',
  }),
  configFiles: (ctx) => [{ path: CONFIG_FILE, content: config(ctx) }],
  defaultTimeoutMs: 30 * 60_000,
  turns: ({ stdout }) => countJsonEvents(stdout, 'step_finish'),
};
