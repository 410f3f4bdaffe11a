import { z } from 'zod';

/**
 * Parent to child, once: the configuration the child's gateway runs with; with `placementOverIpc`
 * it places through its parent's placement over this channel, not `gateway.placementUrl`.
 */
export const ChildStartMessage = z.object({ type: z.literal('start'), config: z.unknown(), placementOverIpc: z.boolean().default(false) });
export type ChildStartMessage = z.input<typeof ChildStartMessage>;

/** Child to parent: it listens at `url`, or it could not start. */
export const ChildMessage = z.discriminatedUnion('type', [
  z.object({ type: z.literal('listening'), url: z.string().url() }),
  z.object({ type: z.literal('failed'), message: z.string() }),
]);
export type ChildMessage = z.infer<typeof ChildMessage>;
