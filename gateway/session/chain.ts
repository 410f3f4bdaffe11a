import { canonicalKey, type ChatMessage, type ToolSpec } from '../codec/index.js';

/** Where a live turn sits in its chain, so it can be rolled back. */
export interface ChainTurn {
  seq: number;
  /** Token offset where this turn's prompt delta begins. */
  start: number;
  /** Length of the chain's history before this turn's appended messages. */
  historyBefore: number;
  /** Token offset where this turn's sampled tokens begin. */
  sampledFrom: number;
  /** Why its generation ended, as the protocols report it (a repeated call is answered with it). */
  finishReason: TurnFinishReason;
}

export type TurnFinishReason = 'stop' | 'tool_calls' | 'length';

/**
 * One linear token sequence of a session. `history` is the canonical conversation the tokens
 * encode (requests' messages and the replies the gateway returned); `tokens` is exactly what the
 * engine saw and sampled.
 */
export class Chain {
  readonly keys: string[] = [];
  readonly history: ChatMessage[] = [];
  tokens: number[] = [];
  turns: ChainTurn[] = [];
  nextSeq = 0;
  /** Set while a request generates on this chain; others wait for it. */
  busy: Promise<void> | undefined;

  constructor(
    readonly index: number,
    readonly tools: ToolSpec[] | undefined,
    readonly toolsKey: string,
  ) {}

  /** Applies a committed turn. */
  commit(turn: {
    baseTokens: number;
    baseHistory: number;
    appended: ChatMessage[];
    delta: number[];
    sampled: number[];
    reply: ChatMessage;
    rolledBack: boolean;
    finishReason: TurnFinishReason;
  }): ChainTurn {
    if (turn.rolledBack) this.turns.pop();
    this.tokens = [...this.tokens.slice(0, turn.baseTokens), ...turn.delta, ...turn.sampled];
    this.history.splice(turn.baseHistory);
    this.keys.splice(turn.baseHistory);
    for (const message of [...turn.appended, turn.reply]) {
      this.history.push(message);
      this.keys.push(canonicalKey(message));
    }
    const committed = {
      seq: this.nextSeq++,
      start: turn.baseTokens,
      historyBefore: turn.baseHistory,
      sampledFrom: turn.baseTokens + turn.delta.length,
      finishReason: turn.finishReason,
    };
    this.turns.push(committed);
    return committed;
  }
}

/** Tool sets compare by content; a changed tool set starts a new chain. */
export function toolsKeyOf(tools: ToolSpec[] | undefined): string {
  return JSON.stringify((tools ?? []).map((t) => [t.function.name, t.function.parameters ?? null]));
}
