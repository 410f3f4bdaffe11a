import { describe, expect, it } from 'vitest';
import { closedLoop, concurrencyOf, noErrors, openLoop, readChatStream, runPass } from '../../bench/gateway/load.js';

/** Runs `schedule` with turns that take a few ms, recording how many were under way at once. */
async function play(schedule: Parameters<typeof runPass>[0]) {
  let live = 0;
  let most = 0;
  const order: string[] = [];
  const pass = await runPass(
    schedule,
    async (s, t) => {
      most = Math.max(most, ++live);
      order.push(`${s}.${t}`);
      await new Promise((r) => setTimeout(r, 3));
      live--;
      return true;
    },
    noErrors(),
  );
  return { pass, most, order };
}

describe('bench:gateway load schedules', () => {
  it('runs more sessions than run at once in turn, each whole before the next starts', async () => {
    const schedule = closedLoop(1, 3, 4);
    expect(concurrencyOf(schedule)).toBe(1);
    const { pass, most, order } = await play(schedule);
    expect(most).toBe(1);
    expect(pass.turns).toBe(12);
    expect(order).toEqual(['0.0', '0.1', '0.2', '1.0', '1.1', '1.2', '2.0', '2.1', '2.2', '3.0', '3.1', '3.2']);
  });

  it('keeps at most `concurrency` sessions going', async () => {
    const { pass, most } = await play(closedLoop(2, 2, 5));
    expect(most).toBe(2);
    expect(pass.turns).toBe(10);
  });

  it('runs every session at once by default', async () => {
    expect(concurrencyOf(closedLoop(3, 2))).toBe(3);
    const open = openLoop(4, 2, 1000, 1);
    expect(concurrencyOf(open)).toBe(4);
    const { pass, most } = await play(closedLoop(3, 2));
    expect(most).toBe(3);
    expect(pass.turns).toBe(6);
  });
});

/** A response body of these server-sent events, cut into network chunks at `cuts` (byte offsets). */
function sseBody(events: string[], cuts: number[] = []): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(events.map((e) => `data: ${e}\n\n`).join(''));
  const bounds = [0, ...cuts, bytes.length];
  return new ReadableStream({
    start(controller) {
      for (let i = 1; i < bounds.length; i++) controller.enqueue(bytes.slice(bounds[i - 1], bounds[i]));
      controller.close();
    },
  });
}

describe('bench:gateway streamed answers', () => {
  const chunk = (delta: object) => JSON.stringify({ choices: [{ index: 0, delta }] });
  const events = [
    chunk({ role: 'assistant', content: '' }),
    chunk({ content: 'Let me ' }),
    chunk({ content: 'look.' }),
    chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'shell', arguments: '{"comm' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: 'and": "ls"}' } }] }),
    chunk({ tool_calls: [{ index: 1, id: 'call_2', type: 'function', function: { name: 'shell', arguments: '{}' } }] }),
    JSON.stringify({ choices: [], usage: { prompt_tokens: 1234 } }),
    '[DONE]',
  ];

  it('puts the answer together as a client does: content joined, each call by its index, the usage', async () => {
    const answer = await readChatStream(sseBody(events, [7, 100, 101, 250]));
    expect(answer).toEqual({
      choices: [
        {
          message: {
            content: 'Let me look.',
            tool_calls: [
              { id: 'call_1', type: 'function', function: { name: 'shell', arguments: '{"command": "ls"}' } },
              { id: 'call_2', type: 'function', function: { name: 'shell', arguments: '{}' } },
            ],
          },
        },
      ],
      usage: { prompt_tokens: 1234 },
    });
  });

  it('takes a stream cut short of [DONE], or with a chunk that is not JSON, as no answer', async () => {
    expect(await readChatStream(sseBody(events.slice(0, -1)))).toBeUndefined();
    expect(await readChatStream(sseBody([chunk({ content: 'x' }), '{"choices": [', '[DONE]']))).toBeUndefined();
  });
});
