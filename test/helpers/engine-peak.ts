import { expect } from 'vitest';
import type { EngineSim } from '../../engine-sim/index.js';
import { openTestSession, sessionInfo } from './gateway.js';

/**
 * Runs `perGateway` concurrent calls of `content` (engine-sim's `long` task answers it) through each
 * gateway URL, each in a session of its own homed on `homeInstance`; the most requests `sim` held at once.
 */
export async function peakOnEngine(sim: EngineSim, urls: string[], perGateway: number, prefix: string, call: { content: string; maxTokens: number; homeInstance: string }): Promise<number> {
  let peak = 0;
  const sampler = setInterval(() => {
    const { running, waiting } = sim.stats();
    peak = Math.max(peak, running + waiting);
  }, 5);
  try {
    const calls = urls.flatMap((url, r) =>
      Array.from({ length: perGateway }, async (_, i) => {
        const sessionId = `${prefix}-${r}-${i}`;
        const key = await openTestSession(url, sessionId, sessionInfo({ homeInstance: call.homeInstance, taskId: 'long' }));
        const response = await fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: JSON.stringify({ messages: [{ role: 'user', content: `${call.content}, ${sessionId}.` }], max_tokens: call.maxTokens }),
        });
        expect(response.status, await response.clone().text()).toBe(200);
        await response.json();
      }),
    );
    await Promise.all(calls);
  } finally {
    clearInterval(sampler);
  }
  return peak;
}
