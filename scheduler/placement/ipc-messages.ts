/**
 * The placement calls of a forked gateway process to the placement its parent runs, over the
 * process's IPC channel (ipc-client.ts, ipc-server.ts): the HTTP API's paths and bodies
 * (protocol.ts) in messages, each call numbered by the child.
 */
import { z } from 'zod';
import { PLACEMENT_PATHS } from './protocol.js';

const CallId = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

/** Child to parent: a call, or the abort of one still unanswered (a held acquire whose caller left). */
export const PlacementIpcRequest = z.discriminatedUnion('type', [
  z.object({ type: z.literal('placement-call'), id: CallId, path: z.enum(PLACEMENT_PATHS), body: z.unknown().optional() }),
  z.object({ type: z.literal('placement-abort'), id: CallId }),
]);
export type PlacementIpcRequest = z.infer<typeof PlacementIpcRequest>;

/** Parent to child: a call's answer, as the HTTP API would have given it (status, JSON body). */
export const PlacementIpcReply = z.object({ type: z.literal('placement-reply'), id: CallId, status: z.number().int(), body: z.unknown().optional() });
export type PlacementIpcReply = z.infer<typeof PlacementIpcReply>;

/** Whether `message` is one of these (and not another protocol's on the same channel). */
export function isPlacementMessage(message: unknown): boolean {
  const type = (message as { type?: unknown } | null)?.type;
  return typeof type === 'string' && type.startsWith('placement-');
}
