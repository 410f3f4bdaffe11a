import { z } from 'zod';
import type { EpisodeRecord, StoredTurn } from '../../../trajectory/index.js';
import type { ChainView } from '../chains.js';
import { html, page, type Html } from '../html.js';
import { turnMessages } from '../messages.js';
import { TOKENS_PER_PAGE, tokenSpans, type DecodeToken } from '../tokens.js';
import { batchHref, episodeHref } from './batch.js';

/** The reward evidence `rewardInfo` may hold (activities/types.ts RewardSummary), read loosely. */
const Evidence = z
  .object({
    reward: z.number(),
    resolved: z.boolean(),
    reason: z.string(),
    passed: z.number(),
    failed: z.number(),
    canaries: z.number(),
    suiteTests: z.number(),
    suiteBroken: z.array(z.string()),
    suiteSkipped: z.string(),
    tests: z.record(z.string(), z.string()),
    screen: z.array(z.object({ rule: z.string(), path: z.string(), line: z.number(), text: z.string() })),
    judge: z.unknown(),
  })
  .partial();

function evidenceBlock(info: Record<string, unknown>): Html {
  const parsed = Evidence.safeParse(info);
  if (!parsed.success || Object.keys(info).length === 0) return html`<section class="evidence" data-evidence=""><h2>Reward evidence</h2><pre>${JSON.stringify(info, null, 2)}</pre></section>`;
  const e = parsed.data;
  const tests = Object.entries(e.tests ?? {});
  return html`<section class="evidence" data-evidence=""><h2>Reward evidence</h2>
<p>Reward <b>${e.reward ?? '–'}</b> · ${e.resolved ? 'resolved' : 'not resolved'} · reason <code>${e.reason ?? '–'}</code> · tests passed ${e.passed ?? '–'}, not passed ${e.failed ?? '–'} · canaries ${e.canaries ?? 'not recorded'}${
    e.suiteTests !== undefined ? ` · suite-baseline tests ${e.suiteTests}` : ''
  }${e.suiteSkipped ? ` · suite baseline skipped: ${e.suiteSkipped}` : ''}</p>
${e.suiteBroken?.length ? html`<p>Suite tests broken: ${e.suiteBroken.map((t, i) => html`${i > 0 ? ', ' : ''}<code>${t}</code>`)}</p>` : ''}
${tests.length > 0 ? html`<table class="tests"><thead><tr><th>test</th><th>outcome</th></tr></thead><tbody>${tests.map(([id, outcome]) => html`<tr class="test-${outcome}" data-test="${outcome}"><td><code>${id}</code></td><td>${outcome}</td></tr>`)}</tbody></table>` : ''}
${e.screen?.length ? html`<h3>Flagged by the screen</h3><ul class="screen">${e.screen.map((f) => html`<li data-screen=""><code>${f.rule}</code> ${f.path}:${f.line} <pre>${f.text}</pre></li>`)}</ul>` : ''}
${e.judge !== undefined ? html`<h3>Judge</h3><pre>${JSON.stringify(e.judge, null, 2)}</pre>` : ''}</section>`;
}

export const turnHref = (batchId: string, episodeId: string, chain: number, turn: number) => `${episodeHref(batchId, episodeId)}/chains/${chain}/turns/${turn}`;

function rollbackMarker(turn: StoredTurn): Html {
  return html`<div class="marker rollback" data-rollback="${turn.seq}">rolled back: the turn committed as #${turn.seq} at position ${turn.turnIndex} (${turn.sampled.length} sampled tokens, ${turn.finishReason}) was replaced by a retry</div>`;
}

function chainBlock(batchId: string, episodeId: string, chain: ChainView): Html {
  const { row } = chain;
  const sampled = row.loss_mask.reduce((sum, m) => sum + m, 0);
  const driftTurn = row.template_drift_offset >= 0 ? chain.spans.findIndex((s) => row.template_drift_offset >= s.start && row.template_drift_offset < s.end) : -1;
  const turns = chain.live.map((turn, t) => {
    const span = chain.spans[t]!;
    const before = chain.rolledBack.filter((r) => r.turnIndex === turn.turnIndex);
    return html`${before.map(rollbackMarker)}<details class="turn${t === driftTurn ? ' drift-turn' : ''}" data-turn="${t}" data-src="${turnHref(batchId, episodeId, row.chain_index, t)}"><summary>turn ${t} · ${span.sampledStart - span.start} prompt + ${span.end - span.sampledStart} sampled tokens · ${row.turn_finish_reason[t]} · ${row.turn_cached_tokens[t]} cached${
      t === driftTurn ? html` · <span class="marker drift-marker">template drift at token ${row.template_drift_offset}</span>` : ''
    }</summary><div class="slot"></div></details>`;
  });
  const orphans = chain.rolledBack.filter((r) => !chain.live.some((l) => l.turnIndex === r.turnIndex));
  return html`<section class="chain" data-chain="${row.chain_index}" data-loss-mask-sum="${sampled}" data-tokens="${row.input_ids.length}"><h2>Chain ${row.chain_index}${row.is_final_chain ? ' (final)' : ''}</h2>
<p>${row.input_ids.length} tokens, ${sampled} sampled (loss_mask 1), ${row.num_turns} turns, ${row.num_rollbacks} rollback(s), template drift: ${
    row.template_drift_offset < 0 ? 'none' : `from token ${row.template_drift_offset} (${row.num_drift_turns} turn(s) sampled after it)`
  }. Open a turn to load its messages and tokens; sampled tokens are highlighted, hover one for its log-prob.</p>${turns}${orphans.map(rollbackMarker)}</section>`;
}

/** An episode: how it ended, the reward's evidence, and each chain with its turns collapsed. */
export function episodePage(batchId: string, episode: EpisodeRecord, chains: readonly ChainView[]): Html {
  return page(
    episode.episodeId,
    html`<h1>Episode <code>${episode.episodeId}</code></h1><p><a href="${batchHref(batchId)}">batch ${batchId}</a> · task <code>${episode.taskId}</code> · sample ${episode.episodeIndex} · agent ${episode.agentName}</p>
<p>Outcome <b>${episode.outcome}</b> · termination <code>${episode.terminationReason}</code> · reward ${episode.reward ?? '–'} · ${episode.numTurns} turns · ${episode.numToolCalls} tool calls · ${episode.tEpisodeS.toFixed(1)} s (environment ${episode.tEnvS.toFixed(1)} s)</p>
${evidenceBlock(episode.rewardInfo)}${chains.length === 0 ? html`<p class="muted">No chains: this episode recorded no session.</p>` : chains.map((c) => chainBlock(batchId, episode.episodeId, c))}`,
  );
}

/**
 * One page of a turn's tokens (the fragment a chain page loads when a turn is opened): the
 * turn's messages with the first page, then a button for the next page while tokens remain.
 */
export function turnFragment(href: string, chain: ChainView, turn: number, offset: number, decode: DecodeToken): Html {
  const span = chain.spans[turn]!;
  const stored = chain.live[turn]!;
  const from = Math.min(span.start + offset, span.end);
  const to = Math.min(from + TOKENS_PER_PAGE, span.end);
  const rest = span.end - to;
  return html`${offset === 0 ? html`<div class="messages">${turnMessages(stored.messagesJson, stored.replyJson)}</div>` : ''}<div class="tokens" data-from="${from}" data-to="${to}">${tokenSpans(chain, from, to, decode)}</div>${
    rest > 0 ? html`<button type="button" class="more" data-more="${href}?offset=${to - span.start}">${Math.min(rest, TOKENS_PER_PAGE)} more of ${rest} tokens</button>` : ''
  }`;
}
