import type { ChatMessage, Codec, ToolSpec } from '../codec/index.js';
import type { ChainReport, StoredTurn } from '../../trajectory/index.js';
import type { Chain } from './chain.js';

/**
 * One chain's drift check, as plain data so that it can be posted to a worker thread
 * (drift-worker-checker.ts): the history stays the JSON the store holds, parsed where it is checked.
 */
export interface DriftInput {
  chainIndex: number;
  tools: ToolSpec[] | undefined;
  /** The tokens the engine saw and sampled: a copy of the chain's, which may cross threads. */
  tokens: Uint32Array;
  /** Where each live turn's sampled tokens begin. */
  sampledFrom: number[];
  /** The chain's live turns, in commit order: their stored messages and reply. */
  turns: { messagesJson: string; replyJson: string }[];
}

/**
 * The drift check of a chain: render its whole history with the chat template and compare with
 * the tokens the engine actually saw. Where the template rewrites history (Qwen3 drops earlier
 * reasoning once a new user turn arrives) they differ; the chain keeps what the model saw, and the
 * report says from where and for how many turns — nothing is patched. It runs once, when the
 * session closes, so the history is read from the store (`driftInputs`) rather than kept live.
 */
export async function driftReport(codec: Codec, input: DriftInput): Promise<ChainReport> {
  const full = await codec.tokenizer.encode(codec.template.render(historyOf(input), { tools: input.tools, addGenerationPrompt: false }));
  const tokens = input.tokens;
  let offset = -1;
  for (let i = 0; i < tokens.length; i++) {
    if (full[i] !== tokens[i]) {
      offset = i;
      break;
    }
  }
  return {
    chainIndex: input.chainIndex,
    driftOffset: offset,
    driftTurns: offset < 0 ? 0 : input.sampledFrom.filter((from) => from > offset).length,
  };
}

/** A chain's canonical history: the messages and reply of each of its live turns, in order. */
export function historyOf(input: Pick<DriftInput, 'turns'>): ChatMessage[] {
  return input.turns.flatMap((t) => [...(JSON.parse(t.messagesJson) as ChatMessage[]), JSON.parse(t.replyJson) as ChatMessage]);
}

/**
 * The drift checks of a session's chains that have turns, from its stored turns: a rolled-back
 * turn is left out (its successor was stored against the history without it).
 */
export function driftInputs(chains: readonly Chain[], turns: readonly StoredTurn[]): DriftInput[] {
  const live = new Map<number, DriftInput['turns']>();
  for (const turn of turns) {
    if (turn.rolledBack) continue;
    let texts = live.get(turn.chainIndex);
    if (!texts) live.set(turn.chainIndex, (texts = []));
    texts.push({ messagesJson: turn.messagesJson, replyJson: turn.replyJson });
  }
  return chains
    .filter((c) => c.turns.length > 0)
    .map((c) => ({
      chainIndex: c.index,
      tools: c.tools,
      tokens: c.tokens.view().slice(),
      sampledFrom: c.turns.map((t) => t.sampledFrom),
      turns: live.get(c.index) ?? [],
    }));
}
