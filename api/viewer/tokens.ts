import { html, type Html } from './html.js';
import type { ChainView } from './chains.js';

/** Tokens one fragment request renders; a longer turn is fetched page by page. */
export const TOKENS_PER_PAGE = 2048;

export type DecodeToken = (id: number) => string;

/**
 * Tokens `[from, to)` of a chain, one span each: sampled ones (loss_mask 1) carry class `sampled`
 * and their log-prob on hover; the template-drift offset is marked where it falls.
 */
export function tokenSpans(chain: ChainView, from: number, to: number, decode: DecodeToken): Html {
  const { row } = chain;
  const spans: Html[] = [];
  for (let i = from; i < to; i++) {
    const id = row.input_ids[i]!;
    const drift = i === row.template_drift_offset;
    const classes = `tok${row.loss_mask[i] === 1 ? ' sampled' : ''}${drift ? ' drift' : ''}`;
    const title = row.loss_mask[i] === 1 ? `#${i} id ${id} logprob ${row.logprobs[i]!.toFixed(4)} v${row.token_version[i]}` : `#${i} id ${id} prompt`;
    spans.push(html`${drift ? html`<span class="marker drift-marker" data-drift="${i}">template drift from here</span>` : ''}<span class="${classes}" title="${title}">${decode(id)}</span>`);
  }
  return html`${spans}`;
}
