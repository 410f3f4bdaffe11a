/**
 * The placement service's API (shared-placement.ts, over HTTP in service.ts and over IPC in ipc-server.ts),
 * shared by the service and its client (remote-router.ts). Calls carry the prompt's chained block hashes and token counts, never
 * the token ids, and of those only the blocks the service has not heard for the chain
 * (chain-blocks.ts). Every body is bounded: a call of the longest context a model serves is a few
 * megabytes of hashes at most.
 */
import { z } from 'zod';

/** Most blocks one call may carry: 8M tokens at the default 64 tokens per block. */
export const MAX_BLOCKS = 131_072;
/** Bytes of one request body the service reads. */
export const BODY_LIMIT_BYTES = 4 * 1024 * 1024;

const Name = z.string().min(1).max(256);
const Tokens = z.number().int().nonnegative().max(2 ** 31);
const Blocks = z.array(z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER)).max(MAX_BLOCKS);
const PlacementId = z.string().min(1).max(64);
/**
 * The prefix of the chain the service already has that `blocks` continue: its length and its last
 * block's hash (chained, it stands for the whole prefix). Absent: `blocks` are all of them.
 */
const Base = z
  .object({ blocks: z.number().int().positive().max(MAX_BLOCKS), hash: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER) })
  .optional();

/**
 * A call that ended: `base` + `blocks` (prompt + output) are now cached on its engine. A `base` the
 * service does not hold only costs the index these blocks.
 */
export const EndedCall = z.object({ id: PlacementId, outputTokens: Tokens, base: Base, blocks: Blocks });
export type EndedCall = z.infer<typeof EndedCall>;
/** Most ends one request carries. */
export const MAX_ENDED = 1_024;
/**
 * Ends a caller batches into one request. They are applied before anything else the request asks;
 * an id the service does not hold (ended already, or lapsed) is skipped and named in the answer.
 */
const Ended = z.array(EndedCall).max(MAX_ENDED).default([]);

/** One model call to place, hashed by the caller. */
export const CallBody = z.object({
  chainId: z.string().min(1).max(512),
  base: Base,
  /** The prompt's block hashes after `base`. */
  blocks: Blocks,
  /** Must equal the service's block size: hashes of other block sizes never match its index. */
  blockSize: z.number().int().positive().max(1 << 16),
  promptTokens: Tokens,
  expectedOutputTokens: Tokens,
  home: Name.optional(),
  /** Calls of this caller that ended since its last request, riding on this one. */
  ended: Ended,
});
export type CallBody = z.input<typeof CallBody>;

/** The service's calls: `GET /v1/instances`, and `POST` for the others. */
export const PLACEMENT_PATHS = ['/v1/acquire', '/v1/place', '/v1/finished', '/v1/failed', '/v1/renew', '/v1/sessions/forget', '/v1/instances'] as const;
export type PlacementPath = (typeof PLACEMENT_PATHS)[number];

/** The answer's status when the service does not hold a call's `base`: send every block again. */
export const STALE_BASE_STATUS = 409;

/** `POST /v1/acquire`: the call's first placement; held (long poll) while no engine has room. */
export const AcquireBody = CallBody;
/** `POST /v1/place`: a failover, at once, avoiding the engines the call failed on. */
export const PlaceBody = CallBody.extend({ exclude: z.array(Name).max(1_024) });
/** `POST /v1/finished`: ends that found no placement request to ride on. */
export const FinishedBody = z.object({ ended: Ended });
/** The answer to finished: the ended ids the service did not hold. */
export const FinishedAnswer = z.object({ unknown: z.array(PlacementId).max(MAX_ENDED) });
export type FinishedAnswer = z.infer<typeof FinishedAnswer>;
/** `POST /v1/failed`: the call failed; `engineDown` when the engine never answered, `timedOut` when that was a timeout. */
export const FailedBody = z.object({ id: PlacementId, engineDown: z.boolean(), timedOut: z.boolean().default(false) });
/** `POST /v1/renew`: the caller's placements still in flight (unrenewed ones lapse). */
export const RenewBody = z.object({ ids: z.array(PlacementId).max(100_000) });
/** `POST /v1/sessions/forget`: the session makes no more calls; its reservations go. */
export const ForgetBody = z.object({ sessionId: z.string().min(1).max(512) });

/** The answer to acquire and place: null when no engine can take the call. */
export const PlacementAnswer = z.object({
  placement: z.object({ id: PlacementId, instance: Name }).nullable(),
  /** Of the ends the request carried, the ids the service did not hold. */
  unknownEnded: z.array(PlacementId).max(MAX_ENDED).default([]),
  /** A placement not renewed for this long is released by the service, ms. */
  leaseMs: z.number().int().positive(),
});
export type PlacementAnswer = z.infer<typeof PlacementAnswer>;

/** `GET /v1/instances`: engine health and what admission holds on each engine. */
export const InstancesAnswer = z.object({
  blockSize: z.number().int().positive(),
  maxAttempts: z.number().int().positive(),
  /** Calls held for want of KV memory. */
  waiting: z.number().int().nonnegative(),
  instances: z
    .array(
      z.object({
        name: Name,
        healthy: z.boolean(),
        kvCapacityTokens: Tokens,
        inFlightRequests: Tokens,
        reservedTokens: Tokens,
        admittedChains: Tokens,
      }),
    )
    .max(4_096),
});
export type InstancesAnswer = z.infer<typeof InstancesAnswer>;
