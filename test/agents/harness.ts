import type { FastifyInstance } from 'fastify';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  createBlackBoxAgentActivity,
  type RunAgentResult,
} from '../../activities/black-box-agent.js';
import { agentSidecarMounts } from '../../agents/presets/index.js';
import { startEngineSim, type EngineSim } from '../../engine-sim/index.js';
import { bubblewrapTmpHostDir } from '../../sandbox/bridge.js';
import { createSandboxProvider, type SandboxProvider } from '../../sandbox/index.js';
import { evaluateReward, workspaceDiff, type RewardResult } from '../../tasks/reward/index.js';
import { builtinPackDir, loadTasks } from '../../tasks/loader.js';
import type { Task } from '../../tasks/schema.js';
import { scriptForTask } from '../../tasks/solution-script.js';
import { SqliteStore, type Store, type StoredTurn } from '../../trajectory/index.js';
import { openTestSession, sessionInfo, startTestGateway } from '../helpers/gateway.js';
import { testCodec, testEngineTokenizer } from '../helpers/stack.js';
import { SAMPLING_DEFAULTS } from '../../gateway/sampling-schema.js';

const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Engine, gateway and sandbox provider for running real agent programs against the scripted policy. */
export interface AgentStack {
  engine: EngineSim;
  store: Store;
  gateway: FastifyInstance;
  gatewayUrl: string;
  sandbox: SandboxProvider;
  rootDir: string;
  tasks: Map<string, Task>;
  close(): Promise<void>;
}

export async function startAgentStack(): Promise<AgentStack> {
  const taskList = await loadTasks(builtinPackDir());
  const engine = await startEngineSim({
    tokenizer: await testEngineTokenizer(),
    script: { tasks: taskList.map(scriptForTask), wanderProbability: 0 },
    kvCapacityTokens: 400_000,
    timeScale: 0,
  });
  // Short: the bridge's Unix socket lives under it.
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ag-'));
  const store = SqliteStore.open(path.join(dir, 'store.sqlite'));
  const { gateway, url: gatewayUrl } = await startTestGateway(store, [
    { name: 'e0', kind: 'vllm', url: engine.url },
  ]);
  const rootDir = path.join(dir, 'sb');
  // As the worker does: the project (and so the task pack and hidden tests) is invisible inside.
  const sandbox = createSandboxProvider({
    provider: 'bubblewrap',
    rootDir,
    hiddenPaths: [PROJECT_ROOT, dir],
  });
  return {
    engine,
    store,
    gateway,
    gatewayUrl,
    sandbox,
    rootDir,
    tasks: new Map(taskList.map((t) => [t.instance_id, t])),
    async close() {
      await gateway.close();
      await engine.close();
      store.close();
      // The sandboxes are gone by now: this takes down the roots they shared.
      await sandbox.release?.();
    },
  };
}

export interface AgentRun {
  sessionId: string;
  result: RunAgentResult;
  reward: RewardResult;
  turns: StoredTurn[];
}

/** The session's context budget, which the activity hands the agent as its context window. */
export const MAX_CONTEXT_TOKENS = 131_072;

/** One episode of `agentName` on a built-in task, scored by the task's hidden tests. */
export async function runAgentEpisode(
  stack: AgentStack,
  agentName: string,
  taskId: string,
  timeoutMs = 100_000,
): Promise<AgentRun> {
  const sessionId = `${agentName}-${taskId}-${Date.now()}`;
  const key = await openTestSession(
    stack.gatewayUrl,
    sessionId,
    sessionInfo({
      batchId: 'agents',
      taskId,
      groupId: 'agents.g0',
      agentName,
      budgets: { maxTurns: 40, maxContextTokens: MAX_CONTEXT_TOKENS, maxWallTimeMs: 600_000 },
      sampling: { ...SAMPLING_DEFAULTS, maxTokens: 4096 },
    }),
  );
  const task = stack.tasks.get(taskId)!;
  const info = await stack.sandbox.create({
    idempotencyKey: `${sessionId}:0`,
    workspaceDir: task.workspace.path,
    readOnlyMounts: agentSidecarMounts(),
    labels: { role: 'agent' },
  });
  const activity = createBlackBoxAgentActivity({
    sandbox: stack.sandbox,
    tasks: { get: async (_source, id) => stack.tasks.get(id)! },
    gateway: { urls: [stack.gatewayUrl] },
    sandboxTmpHostDir: bubblewrapTmpHostDir(stack.rootDir),
    logDir: path.join(stack.rootDir, '..', 'logs'),
  });
  try {
    const result = await activity.runAgent({
      episodeId: sessionId,
      attempt: 0,
      sandboxId: info.id,
      sessionKey: key,
      agentName,
      taskSource: 'builtin',
      taskId,
      timeoutMs,
      maxContextTokens: MAX_CONTEXT_TOKENS,
    });
    const changes = await workspaceDiff(stack.sandbox, info.id);
    const reward = await evaluateReward(
      { provider: stack.sandbox },
      {
        task,
        agentDiff: changes.diff,
        agentDiffRejected: changes.rejected,
        idempotencyKey: `${sessionId}:0`,
      },
    );
    return { sessionId, result, reward, turns: await stack.store.loadTurns(sessionId) };
  } finally {
    await stack.sandbox.destroy(info.id);
  }
}

/** The chain with the most committed turns: the agent's main conversation. */
export function mainChain(turns: StoredTurn[]): StoredTurn[] {
  const byChain = new Map<number, StoredTurn[]>();
  for (const t of turns.filter((t) => !t.rolledBack))
    byChain.set(t.chainIndex, [...(byChain.get(t.chainIndex) ?? []), t]);
  return [...byChain.values()].sort((a, b) => b.length - a.length)[0] ?? [];
}

/** The tool calls a turn's sampled tokens spell, decoded from the ids the engine returned. */
export async function sampledToolCalls(
  turn: StoredTurn,
): Promise<{ name: string; arguments: Record<string, unknown> }[]> {
  const { tokenizer } = await testCodec();
  const text = tokenizer.decode(turn.sampled);
  return [...text.matchAll(/<tool_call>\n([\s\S]*?)\n<\/tool_call>/g)].map(
    (m) => JSON.parse(m[1]!) as { name: string; arguments: Record<string, unknown> },
  );
}

/** The prompt text a turn appended (tool results of the previous turn, etc.). */
export async function promptText(turn: StoredTurn): Promise<string> {
  const { tokenizer } = await testCodec();
  return tokenizer.decode(turn.promptDelta);
}

/** Prints why a test is skipped, so a skipped agent is never mistaken for a passing one. */
export function skipReason(agent: string, installed: boolean): boolean {
  if (!installed) console.warn(`[skip] ${agent} is not installed: run scripts/install-agents.sh`);
  return !installed;
}
