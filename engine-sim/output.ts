import type { Rng } from './prng.js';
import type { ScriptedPolicy } from './script.js';

/** The sampled output of one request, fixed when it arrives and revealed as the engine steps. */
export interface Sample {
  tokenIds: number[];
  logprobs: number[];
  /** Per token: alternatives as [token id, logprob], when top logprobs were asked for. */
  alternatives: [number, number][][] | null;
  finishReason: 'stop' | 'length';
  /** The `stop_token_ids` entry that ended the output (null for EOS or a length cut). */
  stopReason: number | null;
}

/** What shapes a sample, in either API's terms. */
export interface SampleOptions {
  maxTokens: number;
  stopTokenIds: readonly number[];
  /** Alternatives per token to draw (vLLM `logprobs`, SGLang `top_logprobs_num`). */
  topLogprobs: number;
}

/**
 * Plans the output: the policy's turn, cut at a stop token id or at max tokens, with logprobs. The
 * same rng draws give the same sample whichever API asked, so vLLM and SGLang answers agree.
 */
export function sampleOutput(
  policy: ScriptedPolicy,
  prompt: number[],
  options: SampleOptions,
  rng: Rng,
): Sample {
  const eos = policy.endOfTurnId;
  let tokenIds = policy.respond(prompt, rng).tokenIds;
  let finishReason: Sample['finishReason'] = 'stop';
  let stopReason: number | null = null;
  const stops = new Set(options.stopTokenIds);
  const stopAt = tokenIds.findIndex((id) => id !== eos && stops.has(id));
  if (stopAt !== -1) {
    tokenIds = tokenIds.slice(0, stopAt + 1);
    stopReason = tokenIds[stopAt]!;
  }
  if (tokenIds.length > options.maxTokens) {
    tokenIds = tokenIds.slice(0, options.maxTokens);
    finishReason = 'length';
    stopReason = null;
  }
  // −U(0,2)²: mostly confident tokens with a tail of uncertain ones.
  const logprobs = tokenIds.map(() => -((2 * rng()) ** 2));
  const k = options.topLogprobs;
  const alternatives =
    k === 0
      ? null
      : logprobs.map((lp) => {
          // Alternatives share the probability the sampled token left, so the top set sums to ≤ 1.
          const rest = 1 - Math.exp(lp);
          return Array.from({ length: k }, (_, j): [number, number] => [
            prompt[Math.floor(rng() * prompt.length)]!,
            Math.max(Math.log(rest * (0.5 + 0.5 * rng()) * 0.5 ** (j + 1)), -9999),
          ]);
        });
  return { tokenIds, logprobs, alternatives, finishReason, stopReason };
}

/**
 * Visible text of a sample's first tokens, as the engines' detokenizers show it: special tokens
 * dropped when `skipSpecialTokens`, the token that stopped generation left out of the text (but not
 * of the ids or logprobs), and an incomplete UTF-8 character held back until the token that
 * completes it.
 */
export class TextRenderer {
  /** Text of the first `textUpTo` tokens, decoded in pieces that end on character boundaries. */
  private textSoFar = '';
  private textUpTo = 0;
  private pending: number[] = [];

  constructor(
    private readonly sample: Sample,
    private readonly skipSpecialTokens: boolean,
    private readonly decode: (ids: number[]) => string,
    private readonly specialIds: ReadonlySet<number>,
  ) {}

  /** Visible text of the first `n` tokens; `n` never decreases between calls. */
  text(n: number): string {
    const ids = this.sample.tokenIds;
    const final = n === ids.length;
    // A `stop` finish always ends with the token that caused it (EOS or a stop_token_ids entry).
    const visibleEnd = final && this.sample.finishReason === 'stop' ? n - 1 : n;
    for (; this.textUpTo < visibleEnd; this.textUpTo++) {
      const id = ids[this.textUpTo]!;
      if (this.skipSpecialTokens && this.specialIds.has(id)) continue;
      this.pending.push(id);
      const piece = this.decode(this.pending);
      if (!piece.endsWith('\uFFFD')) {
        this.textSoFar += piece;
        this.pending = [];
      }
    }
    if (final && this.pending.length > 0) {
      this.textSoFar += this.decode(this.pending);
      this.pending = [];
    }
    return this.textSoFar;
  }
}
