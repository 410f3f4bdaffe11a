import type { ToolSpec } from '../codec/index.js';
import type { SessionRecord, StoredTurn } from '../../trajectory/index.js';
import { Chain, toolsKeyOf, type AssistantMessage } from './chain.js';
import { Mutex } from './mutex.js';

/** A session's live state: its chains and budget counters. */
export class GatewaySession {
  readonly chains: Chain[] = [];
  readonly lock = new Mutex();
  /** Committed turns minus rolled-back ones, over all chains. */
  liveTurns = 0;
  toolCalls = 0;
  rollbacks = 0;
  /** Trainable (sampled) tokens dropped by rollbacks. */
  rolledBackTokens = 0;
  /** The first budget that ended the session, if any. */
  terminationReason: string | undefined;

  constructor(readonly record: SessionRecord) {}

  /**
   * A chain for a request that continues none: in the slot of a chain whose first turn never
   * committed (the engine failed it, the client aborted it), so a retry leaves no empty chain
   * behind, else a new one at the end.
   */
  newChain(tools: ToolSpec[] | undefined): Chain {
    const free = this.chains.findIndex((c) => c.turns.length === 0 && !c.busy);
    const index = free < 0 ? this.chains.length : free;
    const chain = new Chain(index, tools, toolsKeyOf(tools));
    this.chains[index] = chain;
    return chain;
  }

  /** Rebuilds chains from the store after a gateway restart. */
  static restore(record: SessionRecord, turns: StoredTurn[]): GatewaySession {
    const session = new GatewaySession(record);
    for (const turn of turns) {
      // Chains reserved by requests that never committed left no turns: keep indexes dense.
      while (session.chains.length < turn.chainIndex) session.chains.push(new Chain(session.chains.length, undefined, toolsKeyOf(undefined)));
      let chain = session.chains[turn.chainIndex];
      if (!chain) {
        const tools = turn.toolsJson ? (JSON.parse(turn.toolsJson) as ToolSpec[]) : undefined;
        chain = new Chain(turn.chainIndex, tools, toolsKeyOf(tools));
        session.chains[turn.chainIndex] = chain;
      }
      if (turn.rolledBack) {
        session.rollbacks += 1;
        session.rolledBackTokens += turn.sampled.length;
        chain.nextSeq = turn.seq + 1;
        continue;
      }
      chain.nextSeq = turn.seq;
      const reply = JSON.parse(turn.replyJson) as AssistantMessage;
      chain.commit({
        baseTokens: chain.tokens.length,
        baseHistory: chain.keys.length,
        appended: JSON.parse(turn.messagesJson),
        delta: turn.promptDelta,
        sampled: turn.sampled,
        reply,
        rolledBack: false,
        // Stored as the trajectory spec names it (`tool_call`, `abort_resumed`, ...).
        finishReason: reply.tool_calls?.length ? 'tool_calls' : turn.finishReason === 'length' ? 'length' : 'stop',
      });
      session.liveTurns += 1;
      session.toolCalls += reply.tool_calls?.length ?? 0;
    }
    return session;
  }
}
