import { createBatchResultActivities } from '../activities/batch-results.js';
import type { Activities } from '../activities/index.js';
import type { ArtifactStore, Store } from '../trajectory/index.js';

/**
 * Activities that do nothing but return well-formed results, so the benchmark measures what
 * Temporal and our workflow structure cost, not sandboxes or models. Each trivial episode runs
 * `EPISODE_ACTIVITIES` of them (one agent step). The batch's own bookkeeping (each sample's
 * ending, its finished groups) is real: it goes to `results.store`.
 */
export function createNoopActivities(hostQueue: string, results: { store: Store; artifacts: ArtifactStore }): Activities & { noop(): Promise<void> } {
  return {
    ...createBatchResultActivities(results),
    noop: async () => undefined,
    admitEpisode: async () => ({ instance: 'noop' }),
    releaseEpisode: async () => undefined,
    createSandbox: async () => ({ sandboxId: 'noop', hostQueue }),
    cleanupAttempt: async () => undefined,
    openSession: async (input) => ({ sessionId: `${input.episodeId}:${input.attempt}`, key: 'noop' }),
    agentStep: async () => ({ done: true, reason: 'submitted', turns: 1, toolCalls: 1, envSeconds: 0 }),
    runAgent: async () => ({ exitCode: 0, timedOut: false, reason: 'completed', logPath: '' }),
    computeReward: async () => ({ reward: 1, resolved: true, reason: 'resolved', passed: 1, failed: 0 }),
    closeSession: async (input) => ({ sessionId: input.sessionId, chains: 1, turns: 1, toolCalls: 1, rollbacks: 0, rolledBackTokens: 0, tokens: 0, sampledTokens: 0, terminationReason: undefined, minVersion: null, maxVersion: null }),
    finishEpisode: async () => undefined,
    exportGroup: async () => ({ uri: 'file:///dev/null', format: 'arrow-stream' as const, rows: 0, sha256: '' }),
    policyVersion: async () => ({ version: 0 }),
    sweepHost: async () => ({ expired: [], closed: [], agentState: [] }),
    listJanitorHosts: async () => [],
  };
}
export type NoopActivities = ReturnType<typeof createNoopActivities>;

/** admit, create, open, one step, reward, close, finish, cleanup, release. */
export const EPISODE_ACTIVITIES = 9;
