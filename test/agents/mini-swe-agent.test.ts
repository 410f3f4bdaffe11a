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

const installed = sidecarHas('venv/bin/python') && sidecarHas('venv/bin/mini');
let stack: AgentStack;
let run: AgentRun;

describe.skipIf(skipReason('mini-swe-agent', installed))(
  'mini-swe-agent in a sandbox through the bridge',
  () => {
    beforeAll(async () => {
      stack = await startAgentStack();
      run = await runAgentEpisode(stack, 'mini-swe-agent', 'js-ini-parser-1');
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

    it('stores one chain whose sampled tool calls are the commands the agent ran', async () => {
      const chain = mainChain(run.turns);
      expect(new Set(run.turns.map((t) => t.chainIndex)).size).toBe(1);
      expect(chain.length).toBe(4);
      expect(run.result.turns).toBe(chain.length);
      const calls = await Promise.all(chain.map(sampledToolCalls));
      expect(calls.map((c) => c.map((x) => x.name))).toEqual([
        ['bash'],
        ['bash'],
        ['bash'],
        ['bash'],
      ]);
      const commands = calls.map((c) => c[0]!.arguments.command as string);
      expect(commands[0]).toBe('cat -n src/ini.js');
      expect(commands[1]).toContain('git apply /tmp/fix.patch');
      expect(commands[2]).toBe('node --test');
      expect(commands[3]).toBe('echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT');
      // Each command's output came back as the next turn's tool result: the agent executed it.
      expect(await promptText(chain[1]!)).toContain('function parse');
      expect(await promptText(chain[2]!)).toContain('"returncode": 0');
      expect(await promptText(chain[3]!)).toMatch(/# fail 0/);
    });
  },
);
