/**
 * Codex CLI (npm `@openai/codex`, `codex exec`): the OpenAI Responses API against the gateway's
 * `/v1/responses` through a custom model provider, non-interactive, with its own command sandbox
 * and approvals off (the sandbox is the boundary). Update checks, analytics, feedback and web
 * search are off, so only the bridge is ever contacted.
 */
import { z } from 'zod';
import { compactionTokenLimit } from './limits.js';
import { AGENTS_SANDBOX_DIR } from './sidecar.js';
import { BASE_ENV, type AgentPreset, type AgentRunContext } from './types.js';

const CODEX_HOME = '/tmp/.codex';
/**
 * The platform binary itself, not the npm launcher, which is a node script: the binary is static
 * (musl), so it runs in any image.
 */
const CODEX_BIN = `${AGENTS_SANDBOX_DIR}/npm/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex`;
const PROVIDER = 'gateway';
const API_KEY_ENV = 'ROLLOUT_API_KEY';

/** A TOML basic string: JSON's escapes are TOML's for the characters these values hold. */
const tomlString = (value: string) => JSON.stringify(value);

function config(ctx: AgentRunContext): string {
  return [
    `model = ${tomlString(ctx.model)}`,
    `model_provider = ${tomlString(PROVIDER)}`,
    `model_context_window = ${ctx.maxContextTokens}`,
    `model_auto_compact_token_limit = ${compactionTokenLimit(ctx.maxContextTokens)}`,
    'approval_policy = "never"',
    'sandbox_mode = "danger-full-access"',
    'check_for_update_on_startup = false',
    'web_search = "disabled"',
    '',
    `[model_providers.${PROVIDER}]`,
    'name = "agent-rollout gateway"',
    `base_url = ${tomlString(`${ctx.baseUrl}/v1`)}`,
    'wire_api = "responses"',
    `env_key = ${tomlString(API_KEY_ENV)}`,
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[feedback]',
    'enabled = false',
    '',
  ].join('\n');
}

/** One `--json` event line: a thread or turn event, or an item started or completed. */
const Event = z.object({
  type: z.string(),
  item: z.object({ id: z.string(), type: z.string() }).passthrough().optional(),
});

/** Items the model's answer consists of; `error` and the like are Codex's own. */
const ANSWER_ITEMS = new Set(['reasoning', 'agent_message']);
/** Items that are tool calls: the model's when they appear, their result when they complete. */
const TOOL_ITEMS = new Set(['command_execution', 'file_change', 'mcp_tool_call', 'web_search']);

/**
 * Model calls of a run. `codex exec --json` marks user turns, not model calls, so an answer is
 * counted where answer items start after the tool results went back (or after a turn started):
 * exact while the model calls one tool per answer, the Codex default for a model it has no
 * metadata for.
 */
function modelCalls(stdout: string): number {
  let calls = 0;
  let awaitingAnswer = true;
  const seen = new Set<string>();
  for (const line of stdout.split('\n')) {
    let event: z.infer<typeof Event>;
    try {
      event = Event.parse(JSON.parse(line));
    } catch {
      continue; // not an event line
    }
    if (event.type === 'turn.started') awaitingAnswer = true;
    const item = event.item;
    if (!item || !(ANSWER_ITEMS.has(item.type) || TOOL_ITEMS.has(item.type))) continue;
    if (!seen.has(item.id)) {
      seen.add(item.id);
      if (awaitingAnswer) calls++;
      awaitingAnswer = false;
    }
    if (event.type === 'item.completed' && TOOL_ITEMS.has(item.type)) awaitingAnswer = true;
  }
  return calls;
}

export const codex: AgentPreset = {
  name: 'codex',
  command: (ctx) => [
    CODEX_BIN,
    'exec',
    '--json',
    '--color',
    'never',
    '--ephemeral',
    '--skip-git-repo-check',
    '--dangerously-bypass-approvals-and-sandbox',
    ctx.prompt,
  ],
  env: (ctx) => ({ ...BASE_ENV, CODEX_HOME, [API_KEY_ENV]: ctx.apiKey }),
  configFiles: (ctx) => [{ path: `${CODEX_HOME}/config.toml`, content: config(ctx) }],
  defaultTimeoutMs: 30 * 60_000,
  turns: ({ stdout }) => {
    const calls = modelCalls(stdout);
    return calls > 0 ? calls : undefined;
  },
};
