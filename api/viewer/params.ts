import { z } from 'zod';
import { BatchIdSchema } from '../schemas.js';

/**
 * Episode ids are `<batch>/<task>/<sample>` (and a re-run suffix), and task ids are free text: any
 * printable id of bounded length is looked up as it is (links encode it, pages escape it).
 */
const EpisodeIdSchema = z.string().regex(/^[^\x00-\x1f\x7f]{1,1000}$/, 'an episode id: 1 to 1000 printable characters');
/** A whole number in decimal digits (no sign, exponent or blank), at most `max`. */
const Index = (max: number) =>
  z
    .string()
    .regex(/^\d{1,9}$/, 'a whole number')
    .transform(Number)
    .pipe(z.number().max(max));

export const BatchPath = z.object({ id: BatchIdSchema });
export const EpisodePath = BatchPath.extend({ episode: EpisodeIdSchema });
/** A session holds far fewer chains and turns than these bounds. */
export const TurnPath = EpisodePath.extend({ chain: Index(10_000), turn: Index(100_000) });
/** Token offset inside a turn: a chain is bounded by its context window, far below 10M tokens. */
export const TurnQuery = z.object({ offset: Index(10_000_000).default(0) }).strict();
export const NoQuery = z.object({}).strict();
/** The login form's one field. */
export const LoginForm = z.object({ token: z.string().min(1).max(4096) }).strict();
