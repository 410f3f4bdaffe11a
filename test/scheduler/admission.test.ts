import { describe, expect, it } from 'vitest';
import { AdmissionControl } from '../../scheduler/index.js';
import { SqliteStore } from '../../trajectory/index.js';

const instances = [
  { name: 'a', kind: 'vllm' as const, url: 'http://a', kvCapacityTokens: 40_000 },
  { name: 'b', kind: 'vllm' as const, url: 'http://b', kvCapacityTokens: 20_000 },
];

function control() {
  return AdmissionControl.create(SqliteStore.open(':memory:'), instances, { episodeTokens: 10_000, leaseTtlMs: 1_000 });
}

const running = async (admission: AdmissionControl, now: number) => (await admission.load(now)).reduce((n, l) => n + l.running, 0);

describe('episode admission', () => {
  it('admits up to kv capacity / episode tokens per instance, least loaded first', async () => {
    const admission = await control();
    const placed: (string | undefined)[] = [];
    for (let i = 0; i < 6; i++) placed.push((await admission.tryAdmit(`e${i}`, 0))?.instance);
    // a has 4 slots, b has 2: shares of slots in use decide the order.
    expect(placed).toEqual(['a', 'b', 'a', 'a', 'b', 'a']);
    expect(await admission.tryAdmit('e6', 0)).toBeUndefined();
    expect(await admission.load(0)).toEqual([
      { instance: 'a', running: 4, slots: 4 },
      { instance: 'b', running: 2, slots: 2 },
    ]);
  });

  it('is idempotent per episode and frees a slot on release', async () => {
    const admission = await control();
    const first = await admission.tryAdmit('e0', 0);
    expect(await admission.tryAdmit('e0', 10)).toEqual(first);
    for (let i = 1; i < 6; i++) await admission.tryAdmit(`e${i}`, 0);
    expect(await admission.tryAdmit('late', 0)).toBeUndefined();
    await admission.release('e3');
    expect(await admission.tryAdmit('late', 0)).toBeDefined();
  });

  it('lets unrenewed leases expire, keeps renewed ones, and drops a batch at once', async () => {
    const admission = await control();
    for (let i = 0; i < 6; i++) await admission.tryAdmit(`batch/t/${i}`, 0);
    await admission.renew({ episodeId: 'batch/t/0', instance: 'a' }, 900);
    expect(await running(admission, 1_500)).toBe(1);
    expect(await admission.tryAdmit('next', 1_500)).toBeDefined();
    expect(await admission.releaseAll('batch/')).toBe(1);
    expect(await running(admission, 1_500)).toBe(1);
  });

  it('admits without limit to engines of unknown capacity, least loaded first', async () => {
    const unbounded = [
      { name: 'a', kind: 'vllm' as const, url: 'http://a' },
      { name: 'b', kind: 'vllm' as const, url: 'http://b' },
    ];
    const admission = await AdmissionControl.create(SqliteStore.open(':memory:'), unbounded, { episodeTokens: 10_000, leaseTtlMs: 1_000 });
    const placed: (string | undefined)[] = [];
    for (let i = 0; i < 6; i++) placed.push((await admission.tryAdmit(`e${i}`, 0))?.instance);
    expect(placed).toEqual(['a', 'b', 'a', 'b', 'a', 'b']);
  });
});
