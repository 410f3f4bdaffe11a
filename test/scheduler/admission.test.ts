import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { AdmissionControl } from '../../scheduler/index.js';

const instances = [
  { name: 'a', kind: 'vllm' as const, url: 'http://a', kvCapacityTokens: 40_000 },
  { name: 'b', kind: 'vllm' as const, url: 'http://b', kvCapacityTokens: 20_000 },
];

function control(now = 0) {
  const db = new Database(':memory:');
  const admission = new AdmissionControl(db, instances, { episodeTokens: 10_000, leaseTtlMs: 1_000 });
  return { admission, now };
}

describe('episode admission', () => {
  it('admits up to kv capacity / episode tokens per instance, least loaded first', () => {
    const { admission } = control();
    const placed = Array.from({ length: 6 }, (_, i) => admission.tryAdmit(`e${i}`, 0)?.instance);
    // a has 4 slots, b has 2: shares of slots in use decide the order.
    expect(placed).toEqual(['a', 'b', 'a', 'a', 'b', 'a']);
    expect(admission.tryAdmit('e6', 0)).toBeUndefined();
    expect(admission.load(0)).toEqual([
      { instance: 'a', running: 4, slots: 4 },
      { instance: 'b', running: 2, slots: 2 },
    ]);
  });

  it('is idempotent per episode and frees a slot on release', () => {
    const { admission } = control();
    const first = admission.tryAdmit('e0', 0);
    expect(admission.tryAdmit('e0', 10)).toEqual(first);
    for (let i = 1; i < 6; i++) admission.tryAdmit(`e${i}`, 0);
    expect(admission.tryAdmit('late', 0)).toBeUndefined();
    admission.release('e3');
    expect(admission.tryAdmit('late', 0)).toBeDefined();
  });

  it('lets unrenewed leases expire, keeps renewed ones, and drops a batch at once', () => {
    const { admission } = control();
    for (let i = 0; i < 6; i++) admission.tryAdmit(`batch/t/${i}`, 0);
    admission.renew({ episodeId: 'batch/t/0', instance: 'a' }, 900);
    expect(admission.load(1_500).reduce((n, l) => n + l.running, 0)).toBe(1);
    expect(admission.tryAdmit('next', 1_500)).toBeDefined();
    expect(admission.releaseAll('batch/')).toBe(1);
    expect(admission.load(1_500).reduce((n, l) => n + l.running, 0)).toBe(1);
  });
});
