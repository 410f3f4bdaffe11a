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

const installed = sidecarHas('npm/node_modules/.bin/claude');
let stack: AgentStack;
let run: AgentRun;

describe.skipIf(skipReason('claude-code', installed))(
  'Claude Code in a sandbox through the bridge',
  () => {
    beforeAll(async () => {
      stack = await startAgentStack();
      run = await runAgentEpisode(stack, 'claude-code', 'js-ini-parser-1');
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

    it('stores the conversation as a chain whose sampled Bash calls Claude Code executed', async () => {
      const chain = mainChain(run.turns);
      expect(chain.length).toBe(4);
      expect(run.result.turns).toBe(chain.length);
      const calls = await Promise.all(chain.map(sampledToolCalls));
      expect(calls.map((c) => c.map((x) => x.name))).toEqual([['Bash'], ['Bash'], ['Bash'], []]);
      for (const c of calls.slice(0, 3))
        expect(c[0]!.arguments.description).toEqual(expect.any(String));
      expect(calls[0]![0]!.arguments.command).toBe('cat -n src/ini.js');
      expect(calls[1]![0]!.arguments.command).toContain('git apply /tmp/fix.patch');
      expect(calls[2]![0]!.arguments.command).toBe('node --test');
      expect(await promptText(chain[1]!)).toContain('function parse');
      expect(await promptText(chain[3]!)).toMatch(/# fail 0/);
      expect(JSON.parse(chain[3]!.replyJson).content).toContain('Addressed js-ini-parser-1');
    });
  },
);
