import { messageDigest, type ChatMessage, type ToolSpec } from '../codec/index.js';
import { TokenBuffer } from './token-buffer.js';

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
  /** Tool calls of its reply, taken back from the session's count when the turn is rolled back. */
  toolCalls: number;
  /**
   * Content length of its last appended message when that is a user message: a client that merges
   * a new user message into it (Anthropic joins consecutive user content) re-sends it extended.
   */
  lastUserLength: number | undefined;
}

export type TurnFinishReason = 'stop' | 'tool_calls' | 'length';

export type AssistantMessage = Extract<ChatMessage, { role: 'assistant' }>;

/**
 * One linear token sequence of a session. `keys` are digests of the canonical conversation the
 * tokens encode (requests' messages and the replies the gateway returned); `tokens` is exactly what
 * the engine saw and sampled. The messages themselves live in the store: memory keeps only the last
 * reply, which a repeated call is answered with.
 */
export class Chain {
  readonly keys: string[] = [];
  readonly tokens = new TokenBuffer();
  turns: ChainTurn[] = [];
  nextSeq = 0;
  /** The reply of the last live turn. */
  lastReply: AssistantMessage | undefined;
  /** Set while a request generates on this chain; others wait for it. */
  busy: Promise<void> | undefined;

  constructor(
    readonly index: number,
    readonly tools: ToolSpec[] | undefined,
    readonly toolsKey: string,
  ) {}

  /** Applies a committed turn; `appendedKeys` are the digests of `appended`, when known. */
  commit(turn: {
    baseTokens: number;
    baseHistory: number;
    appended: readonly ChatMessage[];
    appendedKeys?: readonly string[];
    delta: ArrayLike<number>;
    sampled: ArrayLike<number>;
    reply: AssistantMessage;
    rolledBack: boolean;
    finishReason: TurnFinishReason;
  }): ChainTurn {
    if (turn.rolledBack) this.turns.pop();
    this.tokens.truncate(turn.baseTokens);
    this.tokens.append(turn.delta);
    this.tokens.append(turn.sampled);
    this.keys.splice(turn.baseHistory);
    for (const key of turn.appendedKeys ?? turn.appended.map(messageDigest)) this.keys.push(key);
    this.keys.push(messageDigest(turn.reply));
    this.lastReply = turn.reply;
    const lastAppended = turn.appended[turn.appended.length - 1];
    const committed = {
      seq: this.nextSeq++,
      start: turn.baseTokens,
      historyBefore: turn.baseHistory,
      sampledFrom: turn.baseTokens + turn.delta.length,
      finishReason: turn.finishReason,
      toolCalls: turn.reply.tool_calls?.length ?? 0,
      lastUserLength: lastAppended?.role === 'user' ? lastAppended.content.length : undefined,
    };
    this.turns.push(committed);
    return committed;
  }
}

/**
 * Tool sets compare by everything the template renders of them (a description too): a changed tool
 * set starts a new chain, since the stored tokens hold the old tool header.
 */
export function toolsKeyOf(tools: ToolSpec[] | undefined): string {
  return JSON.stringify((tools ?? []).map((t) => [t.function.name, t.function.description ?? null, t.function.parameters ?? null]));
}
