import type { ChatMessage, Codec } from '../codec/index.js';
import type { ChainReport, StoredTurn } from '../../trajectory/index.js';
import type { Chain } from './chain.js';

/**
 * The drift check of a chain: render its whole history with the chat template and compare with
 * the tokens the engine actually saw. Where the template rewrites history (Qwen3 drops earlier
 * reasoning once a new user turn arrives) they differ; the chain keeps what the model saw, and the
 * report says from where and for how many turns — nothing is patched. It runs once, when the
 * session closes, so the history is read from the store (`historiesOf`) rather than kept live.
 */
export async function driftReport(codec: Codec, chain: Chain, history: ChatMessage[]): Promise<ChainReport> {
  const full = await codec.tokenizer.encode(codec.template.render(history, { tools: chain.tools, addGenerationPrompt: false }));
  const tokens = chain.tokens.view();
  let offset = -1;
  for (let i = 0; i < tokens.length; i++) {
    if (full[i] !== tokens[i]) {
      offset = i;
      break;
    }
  }
  return {
    chainIndex: chain.index,
    driftOffset: offset,
    driftTurns: offset < 0 ? 0 : chain.turns.filter((t) => t.sampledFrom > offset).length,
  };
}

/**
 * Each chain's canonical history from its stored turns: the messages and reply of every live turn,
 * in commit order (a rolled-back turn's successor was stored against the history without it).
 */
export function historiesOf(turns: readonly StoredTurn[]): Map<number, ChatMessage[]> {
  const histories = new Map<number, ChatMessage[]>();
  for (const turn of turns) {
    if (turn.rolledBack) continue;
    let history = histories.get(turn.chainIndex);
    if (!history) histories.set(turn.chainIndex, (history = []));
    history.push(...(JSON.parse(turn.messagesJson) as ChatMessage[]), JSON.parse(turn.replyJson) as ChatMessage);
  }
  return histories;
}
