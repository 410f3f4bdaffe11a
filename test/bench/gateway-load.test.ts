import { describe, expect, it } from 'vitest';
import { closedLoop, concurrencyOf, noErrors, openLoop, runPass } from '../../bench/gateway/load.js';

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
