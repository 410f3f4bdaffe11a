import { describe, expect, it } from 'vitest';
import { joinIds, TokenBuffer } from '../../gateway/session/token-buffer.js';

const ids = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);

describe('TokenBuffer', () => {
  it('appends, views and truncates without copying the held tokens', () => {
    const buffer = new TokenBuffer();
    buffer.append([5, 6, 7]);
    buffer.append(new Uint32Array([8]));
    expect(Array.from(buffer.view())).toEqual([5, 6, 7, 8]);
    expect(Array.from(buffer.view(2))).toEqual([5, 6]);
    expect(Array.from(buffer.range(1, 3))).toEqual([6, 7]);
    expect(buffer.at(3)).toBe(8);
    expect(buffer.at(4)).toBeUndefined();
    // A view shares the buffer's memory.
    expect(buffer.view(2).buffer).toBe(buffer.view().buffer);
    buffer.truncate(1);
    expect(buffer.length).toBe(1);
    buffer.append([9]);
    expect(Array.from(buffer.view())).toEqual([5, 9]);
  });

  it('grows with at most an eighth of slack, so memory stays near 4 bytes a token', () => {
    const buffer = new TokenBuffer();
    for (let turn = 0; turn < 16; turn++) buffer.append(ids(2000, turn * 2000));
    expect(buffer.length).toBe(32_000);
    expect(Array.from(buffer.range(31_998))).toEqual([31_998, 31_999]);
    expect(buffer.capacityBytes).toBeGreaterThanOrEqual(32_000 * 4);
    expect(buffer.capacityBytes).toBeLessThanOrEqual(32_000 * 4 * 1.125 + 4);
  });

  it('stages a continued prompt in its spare room as a view, leaving the held tokens as they were', () => {
    const buffer = new TokenBuffer();
    buffer.append([1, 2, 3]);
    const prompt = buffer.withAppended(3, [4, 5]);
    expect(Array.from(prompt)).toEqual([1, 2, 3, 4, 5]);
    expect(buffer.length).toBe(3);
    expect(Array.from(buffer.view())).toEqual([1, 2, 3]);
    // Committing the staged delta writes the same ids in place: the view stays what it was.
    buffer.append([4, 5]);
    expect(prompt.buffer).toBe(buffer.view().buffer);
    expect(Array.from(prompt)).toEqual([1, 2, 3, 4, 5]);
  });

  it('stages a rolled-back prompt as a new array, keeping the turn it replaces until commit', () => {
    const buffer = new TokenBuffer();
    buffer.append([1, 2, 3, 4]);
    const prompt = buffer.withAppended(2, [7, 8, 9]);
    expect(Array.from(prompt)).toEqual([1, 2, 7, 8, 9]);
    expect(prompt.buffer).not.toBe(buffer.view().buffer);
    expect(Array.from(buffer.view())).toEqual([1, 2, 3, 4]);
  });

  it('stages past its capacity by growing', () => {
    const buffer = new TokenBuffer();
    buffer.append(ids(256));
    const prompt = buffer.withAppended(256, ids(300, 256));
    expect(Array.from(prompt)).toEqual(ids(556));
    expect(buffer.length).toBe(256);
  });
});

describe('joinIds', () => {
  it('concatenates into one array', () => {
    expect(Array.from(joinIds(new Uint32Array([1, 2]), [3]))).toEqual([1, 2, 3]);
  });
});
