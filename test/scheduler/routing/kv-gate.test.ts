import { describe, expect, it } from 'vitest';
import { KvGate } from '../../../scheduler/routing/kv-gate.js';
import type { InstanceView, RouteRequest } from '../../../scheduler/routing/types.js';

/** A view of an engine with work in flight (an idle one takes any call). */
const view = (name: string, kvCapacityTokens = 1_000, inFlightRequests = 1): InstanceView => ({
  name,
  kvCapacityTokens,
  kvUsedTokens: 0,
  inFlightRequests,
  inFlightTokens: 0,
  queuedRequests: 0,
  healthy: true,
});

/** A call of `chainId` needing `prompt + output` tokens of KV. */
const call = (chainId: string, prompt: number, output = 100): RouteRequest => ({
  chainId,
  blocks: [],
  blockSize: 64,
  promptTokens: prompt,
  expectedOutputTokens: output,
});

const names = (views: InstanceView[]) => views.map((v) => v.name);

describe('KV gate', () => {
  it('offers the instances where the call fits beside the chains ranked above it, with what they reserve', () => {
    const gate = new KvGate({ arrivalHeadroom: 0 });
    const a = view('a');
    const b = view('b');
    gate.placed(call('x', 500), 'a'); // 600 reserved on a
    gate.placed(call('y', 100), 'b'); // 200 reserved on b
    expect(names(gate.admissible(call('z', 300), [a, b], 0))).toEqual(['a', 'b']);
    expect(names(gate.admissible(call('z', 400), [a, b], 0))).toEqual(['b']);
    expect(gate.admissible(call('z', 400), [a, b], 0)[0]!.kvReservedTokens).toBe(200);
    expect(gate.admissible(call('z', 900), [a, b], 0)).toEqual([]);
  });

  it('makes a chain new to an instance leave arrivalHeadroom free there; one already admitted there does not', () => {
    const gate = new KvGate({ arrivalHeadroom: 0.1 });
    const a = view('a');
    gate.placed(call('x', 400), 'a'); // 500 reserved
    // 500 + 450 fits 1,000 but not with 100 of headroom.
    expect(gate.admissible(call('y', 350), [a], 0)).toEqual([]);
    expect(names(gate.admissible(call('y', 300), [a], 0))).toEqual(['a']);
    gate.placed(call('y', 300), 'a');
    gate.ended(call('y', 300), 'a', 1, 400);
    // y grew to 450: it stays, using the headroom.
    expect(names(gate.admissible(call('y', 350), [a], 2))).toEqual(['a']);
  });

  it('lets a chain alone on an instance through, however large, and any call onto an engine with nothing in flight', () => {
    const gate = new KvGate();
    expect(names(gate.admissible(call('big', 5_000), [view('a')], 0))).toEqual(['a']);
    gate.placed(call('x', 900), 'a');
    gate.placed(call('x2', 900), 'b');
    expect(names(gate.admissible(call('y', 500), [view('a'), view('b', 1_000, 0)], 1))).toEqual(['b']);
  });

  it('stops keeping idle chains their memory once more reservations lapse than are come back to', () => {
    const gate = new KvGate({ idleTtlMs: 100, arrivalHeadroom: 0 });
    const a = view('a');
    gate.placed(call('once', 300), 'a');
    gate.ended(call('once', 300), 'a', 1, 400);
    expect(gate.reservedTokens('a')).toBe(400);
    // It never comes back: its reservation lapses.
    expect(names(gate.admissible(call('other', 100), [a], 200))).toEqual(['a']);
    expect(gate.reservedTokens('a')).toBe(0);
    gate.placed(call('next', 300), 'a');
    gate.ended(call('next', 300), 'a', 201, 400);
    expect(gate.reservedTokens('a')).toBe(0);
  });

  it('keeps an older chain in place as contexts grow: the younger one no longer fits and must move or wait', () => {
    const gate = new KvGate();
    const a = view('a');
    gate.placed(call('old', 300), 'a');
    gate.placed(call('young', 300), 'a');
    gate.ended(call('old', 300), 'a', 1, 400);
    gate.ended(call('young', 300), 'a', 1, 400);
    // Both grew: 700 + 400 would not fit. The older one's next call still does (the younger ranks below it).
    expect(names(gate.admissible(call('old', 600), [a], 2))).toEqual(['a']);
    gate.placed(call('old', 600), 'a');
    expect(gate.admissible(call('young', 450), [a], 3)).toEqual([]);
    // Elsewhere it fits.
    expect(names(gate.admissible(call('young', 450), [a, view('b')], 3))).toEqual(['b']);
  });

  it("frees an idle chain's reservation after idleTtlMs, never one with a call in flight", () => {
    const gate = new KvGate({ idleTtlMs: 100 });
    const a = view('a');
    gate.placed(call('busy', 700), 'a');
    gate.placed(call('idle', 100), 'a');
    gate.ended(call('idle', 100), 'a', 10, 200);
    expect(gate.reservedTokens('a')).toBe(1_000);
    expect(gate.admissible(call('new', 50, 50), [a], 109)).toEqual([]);
    expect(names(gate.admissible(call('new', 50, 50), [a], 110))).toEqual(['a']);
    expect(gate.reservedTokens('a')).toBe(800);
    expect(gate.admittedChains('a')).toBe(1);
  });

  /** Ends a call of each of 32 chains at 0 and brings chain i back after (i + 1)·10 ms: gaps of 10–320 ms. */
  const seeGaps = (gate: KvGate): void => {
    for (let i = 0; i < 32; i++) {
      gate.placed(call(`g${i}`, 10, 10), 'z');
      gate.ended(call(`g${i}`, 10, 10), 'z', 0, 20);
    }
    for (let i = 0; i < 32; i++) gate.admissible(call(`g${i}`, 10, 10), [view('z')], (i + 1) * 10);
  };

  it('keeps an idle reservation for the returnQuantile of the tool gaps seen, at most idleTtlMs', () => {
    const gate = new KvGate({ idleTtlMs: 1_000, arrivalHeadroom: 0, returnQuantile: 0.6 });
    expect(gate.idleTtl).toBe(1_000);
    seeGaps(gate);
    // The 0.6 quantile of 10, 20, …, 320 ms.
    expect(gate.idleTtl).toBe(200);
    const a = view('a');
    gate.placed(call('busy', 700), 'a');
    gate.placed(call('idle', 100), 'a');
    gate.ended(call('idle', 100), 'a', 1_000, 200);
    expect(gate.admissible(call('new', 50, 50), [a], 1_199)).toEqual([]);
    expect(names(gate.admissible(call('new', 50, 50), [a], 1_200))).toEqual(['a']);
    // The cap: gaps above idleTtlMs keep it.
    const capped = new KvGate({ idleTtlMs: 100 });
    seeGaps(capped);
    expect(capped.idleTtl).toBe(100);
  });

  it('sends a chain whose idle reservation lapsed behind the chains that took its memory', () => {
    const gate = new KvGate({ idleTtlMs: 100, arrivalHeadroom: 0 });
    const a = view('a');
    gate.placed(call('old', 500), 'a');
    gate.ended(call('old', 500), 'a', 0, 600);
    // A younger chain waits for room, which the lapse at 100 gives it.
    expect(gate.admissible(call('young', 500), [a], 50)).toEqual([]);
    expect(names(gate.admissible(call('young', 500), [a], 100))).toEqual(['a']);
    gate.placed(call('young', 500), 'a');
    // Back, 'old' no longer outranks it: it does not fit beside it, and cannot push it out.
    expect(gate.admissible(call('old', 500), [a], 101)).toEqual([]);
    expect(names(gate.admissible(call('young', 800), [a], 102))).toEqual(['a']);
    // A reservation that did not lapse keeps its rank: 'kept' was seen before 'later'.
    gate.placed(call('kept', 300), 'b');
    gate.ended(call('kept', 300), 'b', 200, 400);
    gate.placed(call('later', 500), 'b');
    expect(names(gate.admissible(call('kept', 450), [view('b')], 250))).toEqual(['b']);
  });

  it('keeps idle reservations for idleTtlMs whatever the gaps when returnQuantile is 1', () => {
    const gate = new KvGate({ idleTtlMs: 1_000, returnQuantile: 1 });
    seeGaps(gate);
    expect(gate.idleTtl).toBe(1_000);
  });

  it("frees a closed session's idle reservations at once, not those of other sessions or a call in flight", () => {
    const gate = new KvGate({ idleTtlMs: 60_000 });
    gate.placed(call('s1/0', 300), 'a');
    gate.ended(call('s1/0', 300), 'a', 10, 400);
    gate.placed(call('s1/1', 100), 'a');
    gate.placed(call('s10/0', 200), 'a');
    gate.ended(call('s10/0', 200), 'a', 10, 300);
    expect(gate.reservedTokens('a')).toBe(400 + 200 + 300);
    gate.forgetChains('s1/');
    expect(gate.reservedTokens('a')).toBe(200 + 300);
    expect(gate.admittedChains('a')).toBe(2);
  });

  it('releases held calls best rank first as room appears, and skips those that still do not fit', () => {
    const gate = new KvGate<string>({ arrivalHeadroom: 0 });
    const a = view('a');
    gate.placed(call('running', 700), 'a');
    // Ranks are given on first sight: first, second, third.
    expect(gate.admissible(call('first', 400), [a], 0)).toEqual([]);
    expect(names(gate.admissible(call('second', 100), [a], 0))).toEqual(['a']);
    expect(names(gate.admissible(call('third', 50), [a], 0))).toEqual(['a']);
    gate.hold(call('third', 50), 1, 'third');
    gate.hold(call('first', 400), 2, 'first');
    gate.hold(call('second', 100), 3, 'second');
    expect(gate.waitingCalls().map((c) => c.payload)).toEqual(['first', 'second', 'third']);

    const sent: string[] = [];
    const dispatch = (c: { payload: string; request: RouteRequest }, candidates: InstanceView[]) => {
      sent.push(c.payload);
      gate.placed(c.request, candidates[0]!.name);
    };
    // 800 reserved: 'first' (500) does not fit, 'second' (200) does, then 'third' (150) does not.
    gate.pump(5, () => [a], dispatch);
    expect(sent).toEqual(['second']);
    gate.ended(call('running', 700), 'a', 6, 0);
    gate.pump(6, () => [a], dispatch);
    expect(sent).toEqual(['second', 'first', 'third']);
    expect(gate.waiting).toBe(0);
  });

  it('sends a call anyway once it waited maxWaitMs, on any instance offered', () => {
    const gate = new KvGate<number>({ maxWaitMs: 1_000 });
    const a = view('a');
    gate.placed(call('running', 900), 'a');
    gate.hold(call('late', 500), 100, 1);
    expect(gate.nextDeadline()).toBe(1_100);
    const sent: InstanceView[][] = [];
    gate.pump(1_099, () => [a], (_c, candidates) => sent.push(candidates));
    expect(sent).toEqual([]);
    gate.pump(1_100, () => [a], (_c, candidates) => sent.push(candidates));
    expect(sent.map(names)).toEqual([['a']]);
  });

  it("a held chain gives up its idle reservation; a cancelled call is no longer handed out; a dead instance's reservations go", () => {
    const gate = new KvGate<number>();
    const a = view('a');
    gate.placed(call('x', 300), 'a');
    gate.ended(call('x', 300), 'a', 1, 400);
    const held = gate.hold(call('x', 900), 2, 1);
    expect(gate.reservedTokens('a')).toBe(0);
    expect(gate.cancel(held)).toBe(true);
    expect(gate.cancel(held)).toBe(false);
    gate.pump(3, () => [a], () => expect.unreachable());
    gate.placed(call('y', 100), 'a');
    gate.dropInstance('a');
    expect(gate.reservedTokens('a')).toBe(0);
  });

  it('a failed call (nothing cached) ends its chain reservation at once', () => {
    const gate = new KvGate();
    gate.placed(call('x', 300), 'a');
    gate.ended(call('x', 300), 'a', 1, 0);
    expect(gate.reservedTokens('a')).toBe(0);
  });
});
