import { expect } from 'vitest';
import type { EngineSim } from '../../engine-sim/index.js';
import { openTestSession, sessionInfo } from './gateway.js';

/** A call engine-sim's `long` task answers at length: its message (the task's `match`), `max_tokens` and the session's home engine. */
export interface LongCall {
  content: string;
  maxTokens: number;
  homeInstance: string;
}

/** How a long call ended: the answer's status and text, or the name of the error the request failed with. */
export type LongCallEnd = { status: number; text: string } | { error: string };

/** Opens session `sessionId` on `url` and sends `call` in it; `done` settles once it has ended. */
export async function startLongCall(url: string, sessionId: string, call: LongCall, signal?: AbortSignal): Promise<{ done: Promise<LongCallEnd> }> {
  const key = await openTestSession(url, sessionId, sessionInfo({ homeInstance: call.homeInstance, taskId: 'long' }));
  const done = fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ messages: [{ role: 'user', content: `${call.content}, ${sessionId}.` }], max_tokens: call.maxTokens }),
    signal,
  }).then(
    async (r): Promise<LongCallEnd> => ({ status: r.status, text: await r.text() }),
    (error: Error): LongCallEnd => ({ error: error.name }),
  );
  return { done };
}

/**
 * Runs `perGateway` concurrent long calls through each gateway URL, each in a session of its own;
 * the most requests `sim` held at once.
 */
export async function peakOnEngine(sim: EngineSim, urls: string[], perGateway: number, prefix: string, call: LongCall): Promise<number> {
  let peak = 0;
  const sampler = setInterval(() => {
    const { running, waiting } = sim.stats();
    peak = Math.max(peak, running + waiting);
  }, 5);
  try {
    const calls = urls.flatMap((url, r) =>
      Array.from({ length: perGateway }, async (_, i) => {
        const { done } = await startLongCall(url, `${prefix}-${r}-${i}`, call);
        const end = await done;
        expect(end).toMatchObject({ status: 200 });
        // A whole JSON answer, not a cut one.
        JSON.parse((end as { text: string }).text);
      }),
    );
    await Promise.all(calls);
  } finally {
    clearInterval(sampler);
  }
  return peak;
}
