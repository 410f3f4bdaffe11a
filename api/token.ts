import { timingSafeEqual } from 'node:crypto';

/** Whether a given token equals the expected one, in time independent of where they differ. */
export function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
