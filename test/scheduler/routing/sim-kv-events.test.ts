import { describe, expect, it } from 'vitest';
import { EventsOrEstimate } from '../../../scheduler/routing/kv-event-index.js';
import { createPolicy } from '../../../scheduler/routing/policies/index.js';
import { agentBatch, PRESETS, simulate, type SimulationOptions } from '../../../scheduler/simulator/index.js';

const small = agentBatch({
  seed: 3,
  tasks: 3,
  samplesPerTask: 3,
  minTurns: 3,
  maxTurns: 10,
  taskPromptTokens: 1500,
  finalContextTokens: [4000, 9000],
  outputTokens: 60,
  toolDelayMedianS: 0.5,
});
const base = { workload: small, preset: PRESETS['8b'], instances: 3 } as const;

describe('simulator with the engines publishing KV events', () => {
  for (const capacity of [12_000, 60_000]) {
    it(`with no delay and no loss, the event index is the engine's true cached prefix on every routed call (${capacity} KV tokens)`, () => {
      let calls = 0;
      let matched = 0;
      const r = simulate({
        ...base,
        policy: createPolicy('ours'),
        kvCapacityTokens: capacity,
        gate: {},
        kvEvents: { delayS: 0, lossRate: 0 },
        onRoute: (request, lookup, cachedBlocks) => {
          calls++;
          const { events } = lookup as EventsOrEstimate;
          for (const name of ['i0', 'i1', 'i2']) {
            const truth = cachedBlocks(name);
            expect(events.isLive(name, 0), name).toBe(true);
            expect(events.matchedBlocks(name, request.blocks), name).toBe(truth);
            // What the policy reads adds the prompts in flight there: never less than the truth.
            expect(lookup.matchedBlocks(name, request.blocks), name).toBeGreaterThanOrEqual(truth);
            matched += truth;
          }
        },
      });
      expect(calls).toBe(r.requests);
      expect(matched).toBeGreaterThan(0);
      expect(r.kvEvents!.lost).toBe(0);
      expect(r.kvEvents!.batches).toBeGreaterThan(0);
      // The policy's lookups (and the test's) all came from the events.
      expect(r.kvEvents!.lookupsFromEstimate).toBe(0);
    });
  }

  it('without kvEvents the run is unchanged by the option', () => {
    const run = (extra: Partial<SimulationOptions>) => simulate({ ...base, policy: createPolicy('ours'), kvCapacityTokens: 12_000, gate: {}, ...extra });
    const plain = run({});
    expect(plain.kvEvents).toBeUndefined();
    const again = run({});
    expect(again).toEqual(plain);
  });

  it('with loss, instances whose feed has a gap fall back to the estimate and the result says so; replay repairs it', () => {
    const lossy = (replay: boolean) =>
      simulate({ ...base, policy: createPolicy('ours'), kvCapacityTokens: 12_000, gate: {}, kvEvents: { delayS: 0.05, lossRate: 0.2, seed: 5, replay } });
    const lost = lossy(false);
    expect(lost.requests).toBeGreaterThan(0);
    expect(lost.kvEvents!.lost).toBeGreaterThan(0);
    expect(lost.kvEvents!.replayed).toBe(0);
    expect(lost.kvEvents!.lookupsFromEstimate).toBeGreaterThan(0);
    const replayed = lossy(true);
    expect(replayed.kvEvents!.replayed).toBeGreaterThan(0);
    expect(replayed.kvEvents!.lookupsFromEvents).toBeGreaterThan(lost.kvEvents!.lookupsFromEvents);
  });

  it('with a delay, every request still finishes and tokens add up', () => {
    const exact = simulate({ ...base, policy: createPolicy('ours'), kvCapacityTokens: 12_000, kvEvents: { delayS: 0, lossRate: 0 } });
    const late = simulate({ ...base, policy: createPolicy('ours'), kvCapacityTokens: 12_000, kvEvents: { delayS: 0.5, lossRate: 0 } });
    expect(late.requests).toBe(exact.requests);
    expect(late.outputTokens).toBe(exact.outputTokens);
    expect(late.cachedTokens).toBeLessThanOrEqual(late.promptTokens);
  });
});
