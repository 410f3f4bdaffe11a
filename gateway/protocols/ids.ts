import { randomUUID } from 'node:crypto';

/**
 * A response or call id: the prefix, then 24 random hex digits (96 bits), the shape OpenAI and
 * Anthropic ids have. Taken from `randomUUID`, which draws from a batched entropy cache, where
 * `randomBytes` per id costs a call into the system's generator; the UUID's fixed version and
 * variant digits are left out.
 */
export function newId(prefix: string): string {
  const u = randomUUID();
  return `${prefix}${u.slice(0, 8)}${u.slice(9, 13)}${u.slice(15, 18)}${u.slice(20, 23)}${u.slice(24, 30)}`;
}
