import type { Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time.js';

/** The phases of an episode the batch page times, by the activities that make them up. */
export const PHASES = ['admission', 'sandbox', 'agent', 'reward'] as const;
export type Phase = (typeof PHASES)[number];

const PHASE_OF: Record<string, Phase> = {
  admitEpisode: 'admission',
  createSandbox: 'sandbox',
  agentStep: 'agent',
  runAgent: 'agent',
  computeReward: 'reward',
};

/** Episode histories read at once. */
const CONCURRENCY = 8;
/** Ended episodes' times kept in memory (an ended history never changes). */
const CACHED_EPISODES = 20_000;

export type PhaseSeconds = Record<Phase, number>;

/**
 * Seconds each phase took in one episode: from an activity's scheduling to its end, summed over
 * attempts and steps, read from the episode workflow's history (the store keeps no phase times).
 */
export async function episodePhaseSeconds(client: Client, episodeId: string): Promise<PhaseSeconds> {
  const history = await client.workflow.getHandle(episodeId).fetchHistory();
  const scheduled = new Map<string, { phase: Phase; at: number }>();
  const seconds: PhaseSeconds = { admission: 0, sandbox: 0, agent: 0, reward: 0 };
  for (const event of history.events ?? []) {
    const at = tsToMs(event.eventTime);
    const name = event.activityTaskScheduledEventAttributes?.activityType?.name;
    if (name && PHASE_OF[name]) scheduled.set(String(event.eventId), { phase: PHASE_OF[name], at });
    const closed =
      event.activityTaskCompletedEventAttributes ?? event.activityTaskFailedEventAttributes ?? event.activityTaskTimedOutEventAttributes ?? event.activityTaskCanceledEventAttributes;
    const start = closed?.scheduledEventId != null ? scheduled.get(String(closed.scheduledEventId)) : undefined;
    if (start) seconds[start.phase] += (at - start.at) / 1000;
  }
  return seconds;
}

/** Phase times of many episodes, read a few at a time and remembered once read. */
export class PhaseTimes {
  private readonly cache = new Map<string, PhaseSeconds>();
  constructor(private readonly client: Client) {}

  async of(episodeIds: readonly string[]): Promise<Map<string, PhaseSeconds>> {
    const out = new Map<string, PhaseSeconds>();
    const todo = episodeIds.filter((id) => {
      const known = this.cache.get(id);
      if (known) out.set(id, known);
      return !known;
    });
    let next = 0;
    const work = async () => {
      while (next < todo.length) {
        const id = todo[next++]!;
        // An episode whose history is gone (retention) just has no times.
        const times = await episodePhaseSeconds(this.client, id).catch(() => undefined);
        if (!times) continue;
        out.set(id, times);
        if (this.cache.size >= CACHED_EPISODES) this.cache.delete(this.cache.keys().next().value!);
        this.cache.set(id, times);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, work));
    return out;
  }
}
