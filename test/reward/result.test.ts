import { describe, expect, it } from 'vitest';
import { DETAIL_BYTES, tail } from '../../tasks/reward/result.js';

describe('tail (RewardResult.detail)', () => {
  it('keeps short text whole', () => {
    expect(tail('canary tests did not fail\nshort output')).toBe(
      'canary tests did not fail\nshort output',
    );
  });

  it("keeps the reward's message line and the end of long test output", () => {
    const output = Array.from({ length: 500 }, (_, i) => `line ${i}`).join('\n');
    const detail = tail(`canary tests did not fail (x: passed)\n${output}`);
    expect(detail.startsWith('canary tests did not fail (x: passed)\n…')).toBe(true);
    expect(detail.endsWith('line 499')).toBe(true);
    expect(detail.length).toBeLessThanOrEqual(DETAIL_BYTES + 1);
  });

  it('keeps only the end when the first line is itself long output', () => {
    const detail = tail('x'.repeat(5000));
    expect(detail).toBe(`…${'x'.repeat(DETAIL_BYTES)}`);
  });
});
