/**
 * The black-box agent activity: one long activity that runs an unmodified agent program (a preset
 * from `agents/presets`) inside the episode's sandbox, talking to the gateway only through the
 * sandbox's Unix-socket bridge. It heartbeats while the agent runs and returns a small result; the
 * agent's output goes to a log file on the host, the model calls to the gateway's store.
 */
import { ApplicationFailure, asyncLocalStorage } from '@temporalio/activity';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  getAgentPreset,
  UnknownAgentError,
  type AgentRunContext,
} from '../agents/presets/index.js';
import { bridgedBaseUrl, bridgedCommand, startGatewayBridge } from '../sandbox/bridge.js';
import { gatewaySessionId } from '../gateway/client/rendezvous.js';
import { SandboxError, type SandboxProvider } from '../sandbox/provider.js';
import type { Task } from '../tasks/schema.js';

export interface BlackBoxAgentDeps {
  sandbox: SandboxProvider;
  tasks: { get(source: string, taskId: string): Promise<Task> };
  /** The gateway replicas' base URLs on the host. */
  gateway: { urls: readonly string[] };
  /** How long the bridge keeps trying to reach a restarting gateway for an agent's connection, ms. Default 90000. */
  gatewayOutageMs?: number;
  /** Host directory a sandbox sees as `/tmp` (bubblewrap: `bubblewrapTmpHostDir(rootDir)`). */
  sandboxTmpHostDir(sandboxId: string): string;
  /** Host directory for the agents' stdout/stderr logs. */
  logDir: string;
  /** Model name the agents ask for. Default `policy`. */
  model?: string;
  /** Bytes of stdout and of stderr kept in the log. Default 8 MiB. */
  maxLogBytes?: number;
  /** Default 5 s. */
  heartbeatIntervalMs?: number;
}

export interface RunAgentInput {
  episodeId: string;
  attempt: number;
  sandboxId: string;
  sessionKey: string;
  agentName: string;
  taskSource: string;
  taskId: string;
  /** Wall time of the agent run; 0 or absent means the preset's default. */
  timeoutMs?: number;
  /** `limits.maxContextTokens`, the agent's context window. */
  maxContextTokens: number;
}

/** Small: it travels in a Temporal payload. */
export interface RunAgentResult {
  exitCode: number;
  timedOut: boolean;
  /** Model calls, when the agent reports them. */
  turns?: number;
  reason: 'completed' | 'failed' | 'timed_out';
  /** The agent's stdout and stderr, on the worker's host. */
  logPath: string;
}

/** Heartbeats through the activity context when there is one (not when a test calls directly). */
function startHeartbeat(intervalMs: number): () => void {
  const ctx = asyncLocalStorage.getStore();
  if (!ctx) return () => {};
  ctx.heartbeat();
  const timer = setInterval(() => ctx.heartbeat(), intervalMs);
  return () => clearInterval(timer);
}

/** The agent could not be set up in its sandbox (a config file could not be written). */
export class AgentSetupError extends Error {
  override name = 'AgentSetupError';
}

/** Outside `/workspace`, where the provider's `writeFile` does not reach: through a shell's stdin. */
async function writeConfigFile(
  sandbox: SandboxProvider,
  sandboxId: string,
  file: string,
  content: string,
): Promise<void> {
  const r = await sandbox.exec(
    sandboxId,
    ['/bin/sh', '-c', 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"', 'write-config', file],
    { stdin: content, timeoutMs: 30_000 },
  );
  if (r.exitCode !== 0)
    throw new AgentSetupError(`cannot write ${file} in sandbox ${sandboxId}: ${r.stderr.trim()}`);
}

/** `undefined` when the agent left no such file (it may have died before writing it). */
async function readResultFile(
  sandbox: SandboxProvider,
  sandboxId: string,
  file: string,
): Promise<string | undefined> {
  const r = await sandbox.exec(sandboxId, ['cat', '--', file], {
    timeoutMs: 30_000,
    maxOutputBytes: 64 * 1024 * 1024,
  });
  return r.exitCode === 0 && !r.truncated ? r.stdout : undefined;
}

/** Failures that no retry can fix (an unknown agent, an impossible spec) are not retried. */
function nonRetryable(error: unknown): unknown {
  if (error instanceof UnknownAgentError || (error instanceof SandboxError && !error.retryable)) {
    return ApplicationFailure.nonRetryable(error.message, error.name);
  }
  return error;
}

export function createBlackBoxAgentActivity(deps: BlackBoxAgentDeps) {
  return {
    async runAgent(input: RunAgentInput): Promise<RunAgentResult> {
      try {
        return await runOnce(deps, input);
      } catch (error) {
        throw nonRetryable(error);
      }
    },
  };
}

async function runOnce(deps: BlackBoxAgentDeps, input: RunAgentInput): Promise<RunAgentResult> {
  const preset = getAgentPreset(input.agentName);
  const task = await deps.tasks.get(input.taskSource, input.taskId);
  const ctx: AgentRunContext = {
    baseUrl: bridgedBaseUrl(),
    apiKey: input.sessionKey,
    model: deps.model ?? 'policy',
    prompt: task.problem_statement,
    maxContextTokens: input.maxContextTokens,
  };
  const bridge = await startGatewayBridge({
    sandboxTmpHostDir: deps.sandboxTmpHostDir(input.sandboxId),
    gatewayUrls: deps.gateway.urls,
    sessionId: gatewaySessionId(input.episodeId, input.attempt),
    outageMs: deps.gatewayOutageMs,
  });
  const stopHeartbeat = startHeartbeat(deps.heartbeatIntervalMs ?? 5_000);
  // Cancelled (the episode, or this worker shutting down): the agent is killed, not waited for.
  const signal = asyncLocalStorage.getStore()?.cancellationSignal;
  try {
    for (const file of preset.configFiles(ctx))
      await writeConfigFile(deps.sandbox, input.sandboxId, file.path, file.content);
    const result = await deps.sandbox.exec(
      input.sandboxId,
      bridgedCommand(preset.command(ctx), bridge),
      {
        cwd: preset.cwd,
        env: preset.env(ctx),
        timeoutMs: input.timeoutMs || preset.defaultTimeoutMs,
        maxOutputBytes: deps.maxLogBytes ?? 8 * 1024 * 1024,
        signal,
      },
    );
    const logPath = path.join(
      deps.logDir,
      `${encodeURIComponent(input.episodeId)}.a${input.attempt}.${preset.name}.log`,
    );
    await mkdir(deps.logDir, { recursive: true });
    await writeFile(
      logPath,
      `# ${preset.name}: exit ${result.exitCode}${result.timedOut ? ' (timed out)' : ''}${result.truncated ? ' (output truncated)' : ''} after ${result.durationMs} ms\n` +
        `## stdout\n${result.stdout}\n## stderr\n${result.stderr}\n`,
    );
    const resultFile = preset.resultFile
      ? await readResultFile(deps.sandbox, input.sandboxId, preset.resultFile)
      : undefined;
    return {
      exitCode: result.exitCode,
      timedOut: result.timedOut,
      turns: preset.turns({ stdout: result.stdout, resultFile }),
      reason: result.timedOut ? 'timed_out' : result.exitCode === 0 ? 'completed' : 'failed',
      logPath,
    };
  } finally {
    stopHeartbeat();
    await bridge.close();
  }
}

export type BlackBoxAgentActivity = ReturnType<typeof createBlackBoxAgentActivity>;
