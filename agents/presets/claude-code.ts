/**
 * Claude Code (npm `@anthropic-ai/claude-code`, `claude -p`): Anthropic Messages against the
 * gateway's `/v1/messages`, non-interactive, with permission prompts bypassed (the sandbox is the
 * boundary) and every call that is not to the model (telemetry, error reports, updates) off.
 */
import { z } from 'zod';
import { AGENTS_SANDBOX_DIR } from './sidecar.js';
import { BASE_ENV, type AgentPreset } from './types.js';

/** The final `--output-format json` result. */
const Result = z.object({ num_turns: z.number().int() }).passthrough();

export const claudeCode: AgentPreset = {
  name: 'claude-code',
  command: (ctx) => [
    `${AGENTS_SANDBOX_DIR}/npm/node_modules/.bin/claude`,
    '-p',
    ctx.prompt,
    '--output-format',
    'json',
    '--model',
    ctx.model,
    '--dangerously-skip-permissions',
  ],
  env: (ctx) => ({
    ...BASE_ENV,
    ANTHROPIC_BASE_URL: ctx.baseUrl,
    ANTHROPIC_API_KEY: ctx.apiKey,
    // Background and title requests use the "small fast" model: the same policy.
    ANTHROPIC_SMALL_FAST_MODEL: ctx.model,
    ANTHROPIC_DEFAULT_HAIKU_MODEL: ctx.model,
    CLAUDE_CONFIG_DIR: '/tmp/.claude',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    // The sandbox user is root inside its namespace; Claude Code refuses to skip permissions as
    // root unless told it is in a sandbox.
    IS_SANDBOX: '1',
  }),
  configFiles: () => [],
  defaultTimeoutMs: 30 * 60_000,
  turns: ({ stdout }) => {
    try {
      return Result.parse(JSON.parse(stdout.trim().split('\n').at(-1) ?? '')).num_turns;
    } catch {
      return undefined; // no final result: the run died or printed something else
    }
  },
};
