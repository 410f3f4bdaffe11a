import { z } from 'zod';

/** Whether `value` is a list of token ids: safe whole numbers, 0 or more (what `z.number().int().min(0)` accepts). */
function isTokenIdList(value: unknown): value is number[] {
  if (!Array.isArray(value)) return false;
  for (const id of value) if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0) return false;
  return true;
}

/**
 * A list of token ids, checked in one loop: a 32k-token prompt as `z.array(z.number().int())` costs a
 * schema run per element, which made request validation the simulator's largest CPU share.
 */
export const TokenIdList = z.custom<number[]>(isTokenIdList, 'must be a list of token ids (whole numbers >= 0)');

/** A non-empty list of token ids. */
export const NonEmptyTokenIdList = (what: string) => TokenIdList.refine((ids) => ids.length > 0, `${what} must not be empty`);
