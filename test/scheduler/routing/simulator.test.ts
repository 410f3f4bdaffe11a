import { mkdtempSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createPolicy, POLICY_NAMES } from '../../../scheduler/routing/policies/index.js';
import { agentBatch, computeBounds, loadMooncake, PRESETS, simulate } from '../../../scheduler/simulator/index.js';

const tiny = agentBatch({
  seed: 7,
  tasks: 3,
  samplesPerTask: 2,
  minTurns: 2,
  maxTurns: 6,
  taskPromptTokens: 1000,
  finalContextTokens: [3000, 6000],
  outputTokens: 40,
  toolDelayMedianS: 0.5,
});
const turns = tiny.episodes.reduce((s, e) => s + e.turns.length, 0);
const outputs = tiny.episodes.reduce((s, e) => s + e.turns.reduce((t, x) => t + x.outputTokens, 0), 0);
const prompts = tiny.episodes.reduce((s, e) => s + e.turns.reduce((t, x) => t + x.promptTokens, 0), 0);

describe('simulator on a tiny agent batch', () => {
  it('generates growing prompts: each is the previous prompt + output + an observation', () => {
    for (const ep of tiny.episodes) {
      for (let k = 1; k < ep.turns.length; k++) {
        const prev = ep.turns[k - 1]!;
        expect(ep.turns[k]!.promptTokens).toBeGreaterThan(prev.promptTokens + prev.outputTokens);
      }
      expect(ep.delays).toHaveLength(ep.turns.length - 1);
    }
    // Siblings share the task prompt's blocks.
    expect(tiny.episodes[0]!.turns[0]!.seq[0]).toBe(tiny.episodes[1]!.turns[0]!.seq[0]);
    expect(tiny.episodes[0]!.turns[0]!.seq[0]).not.toBe(tiny.episodes[2]!.turns[0]!.seq[0]);
  });

  for (const capacity of [8_000, 40_000]) {
    it(`every policy finishes every request, tokens add up and the bounds hold (${capacity} KV tokens)`, () => {
      const bounds = computeBounds(tiny, PRESETS['8b'], 2, capacity);
      for (const name of POLICY_NAMES) {
        const r = simulate({ workload: tiny, preset: PRESETS['8b'], policy: createPolicy(name), instances: 2, kvCapacityTokens: capacity });
        expect(r.requests, name).toBe(turns);
        expect(r.outputTokens, name).toBe(outputs);
        expect(r.promptTokens, name).toBe(prompts);
        expect(r.cachedTokens, name).toBeLessThanOrEqual(r.promptTokens);
        expect(r.makespan, name).toBeGreaterThanOrEqual(bounds.makespanBound);
        expect(r.hitRate, name).toBeLessThanOrEqual(bounds.hitRateCeiling + 1e-9);
        expect(r.latencyP50, name).toBeLessThanOrEqual(r.latencyP99);
        expect(r.kvImbalance, name).toBeGreaterThanOrEqual(0);
        expect(r.kvImbalance, name).toBeLessThanOrEqual(1);
      }
    });
  }

  it('sticky never migrates; round-robin migrates and forfeits cached tokens', () => {
    const run = (name: 'verl-sticky' | 'round-robin') => simulate({ workload: tiny, preset: PRESETS['8b'], policy: createPolicy(name), instances: 2, kvCapacityTokens: 40_000 });
    expect(run('verl-sticky').migrations).toBe(0);
    const rr = run('round-robin');
    expect(rr.migrations).toBeGreaterThan(0);
    expect(rr.forfeitedTokens).toBeGreaterThan(0);
  });

  it("runs every policy behind the router's admission: all requests finish, and calls wait only when memory is short", () => {
    for (const name of POLICY_NAMES) {
      const run = (capacity: number) =>
        simulate({ workload: tiny, preset: PRESETS['8b'], policy: createPolicy(name), instances: 2, kvCapacityTokens: capacity, gate: {} });
      const scarce = run(8_000);
      expect(scarce.requests, name).toBe(turns);
      expect(scarce.outputTokens, name).toBe(outputs);
      expect(scarce.heldCalls, name).toBeGreaterThan(0);
      expect(scarce.meanRouterWait, name).toBeGreaterThan(0);
      const ample = run(1_000_000);
      expect(ample.requests, name).toBe(turns);
      expect(ample.heldCalls, name).toBe(0);
      expect(ample.meanRouterWait, name).toBe(0);
    }
  });

  it('rejects a workload whose calls cannot fit an instance', () => {
    expect(() => simulate({ workload: tiny, preset: PRESETS['8b'], policy: createPolicy('ours'), instances: 2, kvCapacityTokens: 1000 })).toThrow(/cannot fit/);
  });
});

describe('Mooncake loader', () => {
  it('loads any file in the format and links turns into sessions by their full-block ids', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'mooncake-'));
    const file = path.join(dir, 't.jsonl');
    const rows = [
      { timestamp: 0, input_length: 1100, output_length: 5, hash_ids: [1, 2, 3] },
      { timestamp: 500, input_length: 700, output_length: 3, hash_ids: [9, 10] },
      { timestamp: 1000, input_length: 1600, output_length: 4, hash_ids: [1, 2, 4, 5] }, // extends the first
    ];
    writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
    const w = loadMooncake(file, { timeScale: 2 });
    expect(w.kind).toBe('open');
    expect(w.episodes.map((e) => e.chainId)).toEqual(['s0', 's1', 's0']);
    expect(w.episodes.map((e) => e.start)).toEqual([0, 1, 2]);
    expect(w.episodes[0]!.turns[0]!.promptBlocks).toBe(2); // the third id covers a partial block
    const bounds = computeBounds(w, PRESETS['8b'], 2, 8192);
    const r = simulate({ workload: w, preset: PRESETS['8b'], policy: createPolicy('ours'), instances: 2, kvCapacityTokens: 8192 });
    expect(r.requests).toBe(3);
    expect(r.outputTokens).toBe(12);
    expect(r.makespan).toBeGreaterThanOrEqual(bounds.makespanBound);
    expect(r.hitRate).toBeLessThanOrEqual(bounds.hitRateCeiling + 1e-9);
  });

  it('rejects rows not in the format', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'mooncake-'));
    const file = path.join(dir, 'bad.jsonl');
    writeFileSync(file, '{"timestamp": 0}\n');
    expect(() => loadMooncake(file)).toThrow(/not a Mooncake row/);
  });

  const shared = path.resolve(import.meta.dirname, '../../../../shared/traces/mooncake_fast25_synthetic_trace.jsonl');
  it.skipIf(!existsSync(shared))('loads the shared trace', () => {
    const w = loadMooncake(shared);
    expect(w.episodes).toHaveLength(3993);
  });
});
