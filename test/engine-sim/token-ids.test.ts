import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { NonEmptyTokenIdList, TokenIdList } from '../../engine-sim/token-ids.js';

/** The element-wise schema the one-loop check replaces: both must accept exactly the same values. */
const ElementWise = z.array(z.number().int().min(0));

const CASES: unknown[] = [
  [],
  [0],
  [1, 2, 151_643],
  [2 ** 31],
  [Number.MAX_SAFE_INTEGER],
  [Number.MAX_SAFE_INTEGER + 1],
  [-1],
  [-0],
  [1.5],
  [NaN],
  [Infinity],
  ['1'],
  [null],
  [[1]],
  [1, 2, '3'],
  [{ id: 1 }],
  [true],
  'not a list',
  { 0: 1, length: 1 },
  null,
  undefined,
  42,
];

describe('engine-sim token-id lists', () => {
  it('accepts and rejects exactly what the element-wise zod schema does', () => {
    for (const value of CASES) {
      expect(TokenIdList.safeParse(value).success, JSON.stringify(value) ?? String(value)).toBe(ElementWise.safeParse(value).success);
    }
  });

  it('names the field when a required list is empty', () => {
    const result = NonEmptyTokenIdList('prompt').safeParse([]);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toBe('prompt must not be empty');
    expect(NonEmptyTokenIdList('prompt').safeParse([7]).success).toBe(true);
  });
});
