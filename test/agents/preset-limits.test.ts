import { parse as parseToml } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { getAgentPreset, type AgentRunContext } from '../../agents/presets/index.js';

const ctx: AgentRunContext = {
  baseUrl: 'http://127.0.0.1:18080',
  apiKey: 'key',
  model: 'policy',
  prompt: 'Fix it.',
  maxContextTokens: 50_000,
};

/** The content of the preset's config file whose path ends with `name`. */
function configFile(agent: string, name: string): string {
  const file = getAgentPreset(agent)
    .configFiles(ctx)
    .find((f) => f.path.endsWith(name));
  expect(file?.path, `${agent} writes ${name}`).toMatch(/^\/tmp\//);
  return file!.content;
}

describe('context limits from limits.maxContextTokens', () => {
  it('Codex: the context window, and compaction at 90% of it', () => {
    const config = parseToml(configFile('codex', 'config.toml'));
    expect(config).toMatchObject({
      model_context_window: 50_000,
      model_auto_compact_token_limit: 45_000,
      model_provider: 'gateway',
      model_providers: { gateway: { base_url: 'http://127.0.0.1:18080/v1', wire_api: 'responses' } },
    });
  });

  it('pi: the model context window, and compaction when less than a tenth of it is left', () => {
    const models = JSON.parse(configFile('pi', 'models.json'));
    expect(models.providers.gateway.models[0]).toMatchObject({ id: 'policy', contextWindow: 50_000 });
    const settings = JSON.parse(configFile('pi', 'settings.json'));
    expect(settings.compaction).toMatchObject({ enabled: true, reserveTokens: 5_000 });
    expect(settings.compaction.keepRecentTokens).toBeLessThan(45_000);
  });

  it('OpenCode: the model context limit', () => {
    const config = JSON.parse(configFile('opencode', 'opencode.json'));
    expect(config.provider.gateway.models.policy.limit.context).toBe(50_000);
  });
});

describe('turn counts from the agents JSON events', () => {
  const lines = (...events: object[]) => events.map((e) => JSON.stringify(e)).join('\n');
  const item = (type: string, id: string, extra: object = {}) => ({ id, type, ...extra });

  it('Codex: one model call per answer between tool results, whatever items it consists of', () => {
    const stdout = lines(
      { type: 'thread.started', thread_id: 't' },
      { type: 'item.completed', item: item('error', 'e', { message: 'no model metadata' }) },
      { type: 'turn.started' },
      { type: 'item.completed', item: item('reasoning', 'r1') },
      { type: 'item.started', item: item('command_execution', 'c1') },
      { type: 'item.completed', item: item('command_execution', 'c1') },
      // An answer of a message and a tool call, without reasoning.
      { type: 'item.completed', item: item('agent_message', 'm1') },
      { type: 'item.completed', item: item('file_change', 'f1') },
      { type: 'item.completed', item: item('agent_message', 'm2') },
      { type: 'turn.completed', usage: {} },
    );
    expect(getAgentPreset('codex').turns({ stdout: `${stdout}\nnot json` })).toBe(3);
    expect(getAgentPreset('codex').turns({ stdout: '' })).toBeUndefined();
  });

  it('pi: one model call per turn_end', () => {
    const stdout = lines(
      { type: 'session', version: 3, id: 's' },
      { type: 'agent_start' },
      { type: 'turn_start' },
      { type: 'turn_end', message: {}, toolResults: [{}] },
      { type: 'turn_start' },
      { type: 'turn_end', message: {}, toolResults: [] },
      { type: 'agent_end', messages: [] },
    );
    expect(getAgentPreset('pi').turns({ stdout })).toBe(2);
    expect(getAgentPreset('pi').turns({ stdout: 'boom' })).toBeUndefined();
  });
});
