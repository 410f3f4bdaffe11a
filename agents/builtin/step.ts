import { z } from 'zod';
import { fetchForSession, gatewaySessionId } from '../../gateway/client/rendezvous.js';
import { readWhole, throughOutage } from '../../gateway/client/outage.js';
import { TURN_HEADER } from '../../gateway/session/replay.js';
import type { SandboxProvider } from '../../sandbox/provider.js';
import { AgentStateFile, type AgentState } from './state.js';
import { BUILTIN_TOOLS, SYSTEM_PROMPT } from './tools.js';

export interface AgentStepDeps {
  sandbox: SandboxProvider;
  /** Host directory for agent state files. */
  stateDir: string;
}

export interface AgentStepInput {
  episodeId: string;
  attempt: number;
  sandboxId: string;
  /** Base URLs of the gateway replicas, e.g. `http://127.0.0.1:8300`; the session's is chosen by rendezvous hash. */
  gatewayUrls: readonly string[];
  sessionKey: string;
  /** The task's problem statement: the first user message. */
  problemStatement: string;
  /** Wall time of one shell command. */
  commandTimeoutMs: number;
  /** Bytes of command output shown to the model. */
  maxOutputBytes: number;
  /** How long the gateway may be unreachable during the model call before the step fails, ms. Default 90000. */
  gatewayOutageMs?: number;
  /** Aborts the wait for an unreachable gateway (the activity was cancelled). */
  signal?: AbortSignal;
}

/** Small result of one step: it travels in a Temporal payload. */
export interface AgentStepResult {
  done: boolean;
  reason: 'continue' | 'submitted' | 'no_tool_call' | 'budget';
  turns: number;
  toolCalls: number;
  envSeconds: number;
}

export class AgentProtocolError extends Error {
  override name = 'AgentProtocolError';
}

const ChatResponse = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullish(),
          tool_calls: z
            .array(z.object({ id: z.string(), function: z.object({ name: z.string(), arguments: z.string() }) }))
            .nullish(),
        }),
        finish_reason: z.string(),
      }),
    )
    .min(1),
});

/**
 * One step of the built-in agent: a model call through the gateway, then the tool calls it asked
 * for. State is saved before and after every tool call, so a step retried after a crash neither
 * repeats a model turn it already recorded nor re-runs a command blindly: a command that had
 * started is reported to the model as interrupted.
 */
export async function runAgentStep(deps: AgentStepDeps, input: AgentStepInput): Promise<AgentStepResult> {
  const file = AgentStateFile.for(deps.stateDir, input.episodeId, input.attempt);
  const state: AgentState = (await file.load()) ?? {
    messages: [
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: input.problemStatement },
    ],
    pending: [],
    turns: 0,
    toolCalls: 0,
    envSeconds: 0,
  };
  if (!state.done && state.pending.length === 0) await callModel(state, input, file);
  await runPendingTools(deps, input, state, file);
  return {
    done: state.done !== undefined,
    reason: state.done ?? 'continue',
    turns: state.turns,
    toolCalls: state.toolCalls,
    envSeconds: state.envSeconds,
  };
}

async function callModel(state: AgentState, input: AgentStepInput, file: AgentStateFile): Promise<void> {
  const sessionId = gatewaySessionId(input.episodeId, input.attempt);
  const init = {
    method: 'POST',
    // The turn's position names the call: repeated after the gateway committed it but before its
    // answer arrived, the gateway answers from the stored turn instead of sampling a second one.
    headers: { 'content-type': 'application/json', authorization: `Bearer ${input.sessionKey}`, [TURN_HEADER]: String(state.turns) },
    body: JSON.stringify({ model: 'policy', messages: state.messages, tools: BUILTIN_TOOLS }),
    signal: input.signal,
  };
  const response = await throughOutage(() => readWhole(fetchForSession(input.gatewayUrls, sessionId, '/v1/chat/completions', init)), {
    outageMs: input.gatewayOutageMs,
    signal: input.signal,
  });
  const { text } = response;
  if (!response.ok) throw new AgentProtocolError(`gateway answered ${response.status}: ${text.slice(0, 500)}`);
  const choice = ChatResponse.parse(JSON.parse(text)).choices[0]!;
  const calls = choice.message.tool_calls ?? [];
  state.messages.push({ role: 'assistant', content: choice.message.content ?? '', ...(calls.length ? { tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: c.function })) } : {}) });
  state.turns += 1;
  if (choice.finish_reason === 'length' && calls.length === 0) state.done = 'budget';
  else if (calls.length === 0) state.done = 'no_tool_call';
  state.pending = calls.map((c) => ({ id: c.id, name: c.function.name, arguments: parseArgs(c.function.arguments), started: false }));
  await file.save(state);
}

function parseArgs(json: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(json);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

async function runPendingTools(deps: AgentStepDeps, input: AgentStepInput, state: AgentState, file: AgentStateFile): Promise<void> {
  for (const call of state.pending) {
    if (call.result === undefined) {
      if (call.started) call.result = '[interrupted: the command may or may not have run; check the state before repeating it]';
      else {
        call.started = true;
        await file.save(state);
        const started = performance.now();
        call.result = await executeTool(deps, input, call.name, call.arguments);
        state.envSeconds += (performance.now() - started) / 1000;
        if (call.name === 'submit') state.done = 'submitted';
      }
      state.toolCalls += 1;
      await file.save(state);
    }
  }
  for (const call of state.pending) state.messages.push({ role: 'tool', tool_call_id: call.id, content: call.result ?? '' });
  state.pending = [];
  await file.save(state);
}

async function executeTool(deps: AgentStepDeps, input: AgentStepInput, name: string, args: Record<string, unknown>): Promise<string> {
  switch (name) {
    case 'shell': {
      if (typeof args.command !== 'string') return 'error: shell needs a string "command"';
      const r = await deps.sandbox.exec(input.sandboxId, { shell: args.command }, { timeoutMs: input.commandTimeoutMs, maxOutputBytes: input.maxOutputBytes, signal: input.signal });
      const status = r.timedOut ? `timed out after ${input.commandTimeoutMs} ms` : `exit code ${r.exitCode}`;
      return `${status}${r.truncated ? ' (output truncated)' : ''}\n${r.stdout}${r.stderr ? `\n[stderr]\n${r.stderr}` : ''}`;
    }
    case 'write_file': {
      if (typeof args.path !== 'string' || typeof args.content !== 'string') return 'error: write_file needs string "path" and "content"';
      await deps.sandbox.writeFile(input.sandboxId, args.path, args.content);
      return `wrote ${args.content.length} characters to ${args.path}`;
    }
    case 'submit':
      return 'submitted';
    default:
      return `error: unknown tool ${name}`;
  }
}
