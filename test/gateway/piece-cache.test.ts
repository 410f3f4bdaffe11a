import { describe, expect, it } from 'vitest';
import { PieceCache } from '../../gateway/codec/piece-cache.js';

describe('the piece cache', () => {
  it('holds at most its bound, keeps what is used and drops what is not', () => {
    const cache = new PieceCache(100);
    cache.set('hot', [1]);
    for (let i = 0; i < 1000; i++) {
      cache.set(`cold ${i}`, [i]);
      expect(cache.get('hot')).toEqual([1]);
      expect(cache.size).toBeLessThanOrEqual(100);
    }
    expect(cache.get('cold 999')).toEqual([999]);
    expect(cache.get('cold 0')).toBeUndefined();
  });
});
