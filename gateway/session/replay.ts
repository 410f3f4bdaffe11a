/**
 * Answering a repeated model call from its stored turn. A client that lost the answer to a call
 * the gateway had already committed (the gateway restarted between commit and reply, the
 * connection dropped) sends the same messages again; without more, the planner takes that for a
 * retried last turn and rolls it back (or, for a chain's first turn, starts a new chain), so the
 * trajectory would hold a rollback or a second chain that no agent decision caused. A client that
 * names the chain position it is asking for (`TURN_HEADER`) gets the committed turn back instead.
 * Matching uses only what the store keeps (messages and turn positions), so it works the same
 * after a restart or a takeover.
 */
import type { Chain } from './chain.js';

/**
 * Request header naming the position in its chain (0 for the first model call, counting only live
 * turns) of the turn a call asks for. Optional; without it, a repeated call is a rollback.
 */
export const TURN_HEADER = 'x-rollout-turn';

/** The header's value as a turn position; undefined when it is absent or not a whole number. */
export function turnPositionOf(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || !/^\d{1,9}$/.test(value)) return undefined;
  return Number(value);
}

/**
 * The chain whose last live turn is at `position` and was asked for with exactly these messages
 * (the chain's history before that turn's reply) and tool set: the request repeats that turn.
 */
export function findRepeatedTurn(chains: readonly Chain[], keys: readonly string[], toolsKey: string, position: number): Chain | undefined {
  return chains.find((chain) => {
    if (chain.toolsKey !== toolsKey || chain.turns.length !== position + 1) return false;
    if (keys.length !== chain.keys.length - 1) return false;
    return keys.every((key, i) => key === chain.keys[i]);
  });
}
