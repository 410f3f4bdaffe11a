import type { EpisodeRecord } from '../../../trajectory/index.js';
import type { BatchSummary, BatchView } from '../batch-data.js';
import { html, page, type Html } from '../html.js';
import { PHASES, type PhaseSeconds } from '../phase-times.js';
import { barChart, scatterPlot, stripPlot, type PlotPoint } from '../svg.js';

export const batchHref = (batchId: string) => `/viewer/batches/${encodeURIComponent(batchId)}`;
export const episodeHref = (batchId: string, episodeId: string) => `${batchHref(batchId)}/episodes/${encodeURIComponent(episodeId)}`;

function countBy<T>(items: readonly T[], key: (item: T) => string): { label: string; value: number }[] {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
  return [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([label, value]) => ({ label, value }));
}

function rewardPlot(batchId: string, episodes: readonly EpisodeRecord[]): Html {
  const scored = episodes.filter((e) => e.reward !== null);
  const tasks = [...new Set(scored.map((e) => e.taskId))].sort();
  const rows = tasks.map((task) => ({
    label: task,
    points: scored
      .filter((e) => e.taskId === task)
      .map((e): PlotPoint => ({ x: e.reward!, y: e.episodeIndex, key: e.episodeId, label: `${e.episodeId}: reward ${e.reward}`, href: episodeHref(batchId, e.episodeId) })),
  }));
  const unscored = episodes.length - scored.length;
  return html`<h2>Reward per task</h2>${stripPlot('reward', rows, 'reward')}${unscored > 0 ? html`<p class="muted">${unscored} episode(s) without a reward (infra_error) are not plotted.</p>` : ''}`;
}

function turnsTokensPlot(batchId: string, episodes: readonly EpisodeRecord[], tokens: ReadonlyMap<string, number>): Html {
  const points = episodes.map((e): PlotPoint => {
    const t = tokens.get(e.episodeId);
    return { x: e.numTurns, y: t ?? 0, key: e.episodeId, label: `${e.episodeId}: ${e.numTurns} turns, ${t === undefined ? 'tokens not reported' : `${t} tokens`}`, href: episodeHref(batchId, e.episodeId) };
  });
  const unreported = episodes.filter((e) => !tokens.has(e.episodeId)).length;
  return html`<h2>Turns and tokens per episode</h2>${scatterPlot('turns-tokens', points, 'turns', 'tokens')}${
    unreported > 0 ? html`<p class="muted">${unreported} episode(s) reported no token count (plotted at 0).</p>` : ''
  }`;
}

function groupsPlot(view: BatchView): Html {
  const filtered = view.groups.filter((g) => g.status === 'filtered');
  return html`<h2>Groups</h2>${barChart('groups', countBy(view.groups, (g) => g.status), 'groups')}<p>Filtered groups (uniform rewards, no file): ${
    filtered.length === 0 ? 'none' : html`<span data-filtered-groups="${filtered.length}">${filtered.map((g, i) => html`${i > 0 ? ', ' : ''}<code>${g.groupId}</code> (${g.taskId})`)}</span>`
  }</p>`;
}

function episodeTable(batchId: string, episodes: readonly EpisodeRecord[]): Html {
  const rows = episodes.map(
    (e) =>
      html`<tr data-episode="${e.episodeId}"><td><a href="${episodeHref(batchId, e.episodeId)}">${e.episodeId}</a></td><td>${e.taskId}</td><td>${e.episodeIndex}</td><td>${e.outcome}</td><td>${e.reward ?? '–'}</td><td>${e.terminationReason}</td><td>${e.numTurns}</td><td>${e.numToolCalls}</td><td>${e.tEpisodeS.toFixed(1)}</td></tr>`,
  );
  return html`<h2>Episodes</h2><table class="episodes"><thead><tr><th>episode</th><th>task</th><th>sample</th><th>outcome</th><th>reward</th><th>termination</th><th>turns</th><th>tool calls</th><th>seconds</th></tr></thead><tbody>${rows}</tbody></table>`;
}

/** A batch: its progress, plots over its ended episodes, and the episodes linked to their chains. */
export function batchPage(batchId: string, summary: Pick<BatchSummary, 'status' | 'progress'>, view: BatchView, tokens: ReadonlyMap<string, number>): Html {
  const p = summary.progress;
  return page(
    batchId,
    html`<h1>Batch <code>${batchId}</code></h1><p>Status: <b data-status="${summary.status}">${summary.status}</b>${
      p ? html` · ${p.done} / ${p.total} done, ${p.running} running, ${p.infraErrors} failed (infra), ${p.stale} stale` : ''
    } · ${view.episodes.length} episode(s) recorded</p>
${rewardPlot(batchId, view.episodes)}${turnsTokensPlot(batchId, view.episodes, tokens)}
<h2>Termination reasons</h2>${barChart('termination', countBy(view.episodes, (e) => e.terminationReason), 'episodes')}
<h2>Time per phase</h2><div class="lazy" data-src="${batchHref(batchId)}/phases"><p class="muted">Reading the episodes' histories…</p></div>
${groupsPlot(view)}${episodeTable(batchId, view.episodes)}`,
  );
}

/** The phase plot (a fragment the batch page loads): mean seconds per phase over the episodes read. */
export function phasesFragment(times: ReadonlyMap<string, PhaseSeconds>, episodes: number): Html {
  const n = times.size;
  const bars = PHASES.map((phase) => {
    const total = [...times.values()].reduce((sum, t) => sum + t[phase], 0);
    const mean = n > 0 ? total / n : 0;
    return { label: phase, value: Number(mean.toFixed(3)), text: `mean ${mean.toFixed(2)} s, total ${total.toFixed(1)} s` };
  });
  return html`${barChart('phases', bars, 'seconds (mean per episode)')}<p class="muted" data-phase-episodes="${n}">Over ${n} of ${episodes} episode(s) whose workflow history could be read.</p>`;
}
