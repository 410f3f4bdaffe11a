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

/** What differs between the agents; everything else each of them must do the same way. */
interface AgentCase {
  name: string;
  title: string;
  /** Files the install script puts in the sidecar. */
  binaries: string[];
  /** The agent's own shell tool, as the scripted policy must call it. */
  shellTool: string;
  /** The shell tool's parameter that holds the command line. */
  commandParam: string;
  /** mini-swe-agent submits with a command; the others end with a plain answer. */
  submitCommand: string | null;
  /** OpenCode asks for a conversation title on a chain of its own. */
  titleChain: boolean;
  /** Claude Code's Bash tool requires a description. */
  describesCommands: boolean;
  /** How the tool result of the test run reads in the next prompt. */
  testsPassed: RegExp;
}

const AGENTS: AgentCase[] = [
  {
    name: 'mini-swe-agent',
    title: 'mini-swe-agent',
    binaries: ['venv/bin/python', 'venv/bin/mini'],
    shellTool: 'bash',
    commandParam: 'command',
    submitCommand: 'echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT',
    titleChain: false,
    describesCommands: false,
    testsPassed: /"returncode": 0/,
  },
  {
    name: 'opencode',
    title: 'OpenCode',
    binaries: ['npm/node_modules/.bin/opencode'],
    shellTool: 'bash',
    commandParam: 'command',
    submitCommand: null,
    titleChain: true,
    describesCommands: false,
    testsPassed: /# fail 0/,
  },
  {
    name: 'claude-code',
    title: 'Claude Code',
    binaries: ['npm/node_modules/.bin/claude'],
    shellTool: 'Bash',
    commandParam: 'command',
    submitCommand: null,
    titleChain: false,
    describesCommands: true,
    testsPassed: /# fail 0/,
  },
  {
    name: 'codex',
    title: 'Codex',
    binaries: ['npm/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex'],
    shellTool: 'exec_command',
    commandParam: 'cmd',
    submitCommand: null,
    titleChain: false,
    describesCommands: false,
    testsPassed: /# fail 0/,
  },
  {
    name: 'pi',
    title: 'pi',
    binaries: ['npm/node_modules/@mariozechner/pi-coding-agent/dist/cli.js', 'runtime/bin/node'],
    shellTool: 'bash',
    commandParam: 'command',
    submitCommand: null,
    titleChain: false,
    describesCommands: false,
    testsPassed: /# fail 0/,
  },
];

for (const agent of AGENTS) {
  const installed = agent.binaries.every((b) => sidecarHas(b));
  describe.skipIf(skipReason(agent.name, installed))(`${agent.title} in a sandbox through the bridge`, () => {
    let stack: AgentStack;
    let run: AgentRun;

    beforeAll(async () => {
      stack = await startAgentStack();
      run = await runAgentEpisode(stack, agent.name, 'js-ini-parser-1');
    });

    afterAll(async () => {
      await stack?.close();
    });

    it('runs to its own completion and solves the task, as the hidden tests decide', () => {
      expect(run.result, run.result.logPath).toMatchObject({ exitCode: 0, timedOut: false, reason: 'completed' });
      expect(run.reward.reason).toBe('resolved');
      expect(run.reward.reward).toBe(1);
    });

    it('stores the conversation as a chain whose sampled tool calls the agent executed', async () => {
      const chain = mainChain(run.turns);
      expect(chain.length).toBe(4);
      expect(run.result.turns).toBe(chain.length);
      const calls = await Promise.all(chain.map(sampledToolCalls));
      const shell = [agent.shellTool];
      expect(calls.map((c) => c.map((x) => x.name))).toEqual([shell, shell, shell, agent.submitCommand ? shell : []]);
      const command = (i: number) => calls[i]![0]!.arguments[agent.commandParam];
      expect(command(0)).toBe('cat -n src/ini.js');
      expect(command(1)).toContain('git apply /tmp/fix.patch');
      expect(command(2)).toBe('node --test');
      if (agent.describesCommands) for (const c of calls.slice(0, 3)) expect(c[0]!.arguments.description).toEqual(expect.any(String));
      if (agent.submitCommand) expect(command(3)).toBe(agent.submitCommand);
      else expect(JSON.parse(chain[3]!.replyJson).content).toContain('Addressed js-ini-parser-1');
      // Each command's output came back in the next prompt: the agent really executed it.
      expect(await promptText(chain[1]!)).toContain('function parse');
      expect(await promptText(chain[3]!)).toMatch(agent.testsPassed);
    });

    it(agent.titleChain ? 'keeps the title request in a chain of its own' : 'uses no other chain', async () => {
      const main = mainChain(run.turns)[0]!.chainIndex;
      const others = run.turns.filter((t) => t.chainIndex !== main);
      expect(others).toHaveLength(agent.titleChain ? 1 : 0);
      if (agent.titleChain) {
        expect(await promptText(others[0]!)).toMatch(/title/i);
        expect(await sampledToolCalls(others[0]!)).toEqual([]);
      }
    });
  });
}
