import { describe, expect, it } from 'vitest';
import { newId } from '../../gateway/protocols/ids.js';

describe('newId', () => {
  it('is the prefix and 24 hex digits, each of them random (no UUID version or variant digit)', () => {
    const ids = Array.from({ length: 400 }, () => newId('chatcmpl-'));
    for (const id of ids) expect(id).toMatch(/^chatcmpl-[0-9a-f]{24}$/);
    expect(new Set(ids).size).toBe(ids.length);
    for (let at = 'chatcmpl-'.length; at < ids[0]!.length; at++) {
      // 400 draws of a uniform hex digit show all 16 values but with negligible probability (< 1e-9).
      expect(new Set(ids.map((id) => id[at])).size).toBe(16);
    }
  });
});
