import type { Codec } from '../codec/index.js';
import type { ChainReport } from '../../trajectory/index.js';
import type { Chain } from './chain.js';

/**
 * The drift check of a chain: render its whole history with the chat template and compare with
 * the tokens the engine actually saw. Where the template rewrites history (Qwen3 drops earlier
 * reasoning once a new user turn arrives) they differ; the chain keeps what the model saw, and the
 * report says from where and for how many turns — nothing is patched.
 */
export async function driftReport(codec: Codec, chain: Chain): Promise<ChainReport> {
  const full = await codec.tokenizer.encode(codec.template.render(chain.history, { tools: chain.tools, addGenerationPrompt: false }));
  const tokens = chain.tokens;
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
