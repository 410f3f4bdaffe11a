import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sidecarHas } from '../../agents/presets/index.js';
import {
  mainChain,
  promptText,
  runAgentEpisode,
  sampledToolCalls,
  skipReason,
  startAgentStack,
  type AgentRun,
  type AgentStack,
} from './harness.js';

const installed = sidecarHas('npm/node_modules/.bin/opencode');
let stack: AgentStack;
let run: AgentRun;

describe.skipIf(skipReason('opencode', installed))(
  'OpenCode in a sandbox through the bridge',
  () => {
    beforeAll(async () => {
      stack = await startAgentStack();
      run = await runAgentEpisode(stack, 'opencode', 'js-ini-parser-1');
    });

    afterAll(async () => {
      await stack?.close();
    });

    it('runs to its own completion and solves the task, as the hidden tests decide', () => {
      expect(run.result, run.result.logPath).toMatchObject({
        exitCode: 0,
        timedOut: false,
        reason: 'completed',
      });
      expect(run.reward.reason).toBe('resolved');
      expect(run.reward.reward).toBe(1);
    });

    it('stores the conversation as one chain whose sampled tool calls OpenCode executed', async () => {
      const chain = mainChain(run.turns);
      expect(chain.length).toBe(4);
      expect(run.result.turns).toBe(chain.length);
      const calls = await Promise.all(chain.map(sampledToolCalls));
      // The script's shell turns arrive as OpenCode's own `bash` tool; its submit as a plain answer.
      expect(calls.map((c) => c.map((x) => x.name))).toEqual([['bash'], ['bash'], ['bash'], []]);
      expect(calls[0]![0]!.arguments.command).toBe('cat -n src/ini.js');
      expect(calls[1]![0]!.arguments.command).toContain('git apply /tmp/fix.patch');
      expect(calls[2]![0]!.arguments.command).toBe('node --test');
      expect(await promptText(chain[1]!)).toContain('function parse');
      expect(await promptText(chain[3]!)).toMatch(/# fail 0/);
      expect(JSON.parse(chain[3]!.replyJson).content).toContain('Addressed js-ini-parser-1');
    });

    it('keeps the title request in a chain of its own', async () => {
      const chains = new Set(run.turns.map((t) => t.chainIndex));
      expect(chains.size).toBe(2);
      const main = mainChain(run.turns)[0]!.chainIndex;
      const title = run.turns.filter((t) => t.chainIndex !== main);
      expect(title).toHaveLength(1);
      expect(await promptText(title[0]!)).toMatch(/title/i);
      expect(await sampledToolCalls(title[0]!)).toEqual([]);
    });
  },
);
