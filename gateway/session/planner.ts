import { messageDigest, type ChatMessage } from '../codec/index.js';
import type { Chain } from './chain.js';

/** How a request attaches to a session's chains (gateway spec, "Token-level behaviour"). */
export type ChainPlan =
  | { kind: 'continue'; chain: Chain; baseTokens: number; baseHistory: number; appended: ChatMessage[] }
  | { kind: 'rollback'; chain: Chain; baseTokens: number; baseHistory: number; appended: ChatMessage[]; rolledBackSeq: number }
  | { kind: 'new'; appended: ChatMessage[] };

function isPrefix(prefix: readonly string[], of: readonly string[], length = prefix.length): boolean {
  if (length > of.length) return false;
  for (let i = 0; i < length; i++) if (prefix[i] !== of[i]) return false;
  return true;
}

/**
 * Whether `message` is the user message digested as `key` (of `length` characters) with more text
 * appended: the client merged a new user message into it.
 */
function extendsUserMessage(message: ChatMessage | undefined, key: string | undefined, length: number | undefined): boolean {
  if (message?.role !== 'user' || length === undefined || message.content.length <= length) return false;
  return messageDigest({ role: 'user', content: message.content.slice(0, length) }) === key;
}

/**
 * Picks the chain a request continues: the longest chain whose history is a prefix of the request
 * (the newest of equals);
 * else a chain whose history up to, not including, its last reply is a prefix (the client rewrote
 * or dropped that reply, or retried the call): roll that turn back, unless it is the chain's first
 * turn; else a new chain (sub-agents, title requests, compaction, changed tools).
 */
export function planRequest(chains: readonly Chain[], messages: ChatMessage[], keys: string[], toolsKey: string): ChainPlan {
  const candidates = chains.filter((c) => c.toolsKey === toolsKey && c.turns.length > 0);
  // Newest first: of identical siblings (samples, retried first calls) the agent saw the last one.
  candidates.reverse();
  let best: Chain | undefined;
  for (const chain of candidates) {
    if (isPrefix(chain.keys, keys) && (!best || chain.keys.length > best.keys.length)) best = chain;
  }
  if (best) {
    return {
      kind: 'continue',
      chain: best,
      baseTokens: best.tokens.length,
      baseHistory: best.keys.length,
      appended: messages.slice(best.keys.length),
    };
  }
  for (const chain of candidates) {
    const last = chain.turns[chain.turns.length - 1];
    if (!last || chain.turns.length < 2) continue;
    const withoutReply = chain.keys.length - 1;
    const lastAppended = withoutReply - 1;
    const rewritten = isPrefix(chain.keys, keys, withoutReply) && keys[withoutReply] !== chain.keys[withoutReply];
    const merged =
      !rewritten &&
      lastAppended >= last.historyBefore &&
      isPrefix(chain.keys, keys, lastAppended) &&
      extendsUserMessage(messages[lastAppended], chain.keys[lastAppended], last.lastUserLength);
    if (rewritten || merged) {
      return {
        kind: 'rollback',
        chain,
        baseTokens: last.start,
        baseHistory: last.historyBefore,
        appended: messages.slice(last.historyBefore),
        rolledBackSeq: last.seq,
      };
    }
  }
  return { kind: 'new', appended: messages };
}
