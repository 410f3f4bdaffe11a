import type { BatchSummary } from '../batch-data.js';
import { html, page, type Html } from '../html.js';

const href = (batchId: string) => `/viewer/batches/${encodeURIComponent(batchId)}`;

function progressCells(b: BatchSummary): Html {
  const p = b.progress;
  if (!p) return html`<td colspan="5" class="muted">no progress answer (no worker replied)</td>`;
  const failed = p.infraErrors;
  return html`<td data-done="${p.done}">${p.done} / ${p.total}</td><td data-running="${p.running}">${p.running}</td><td data-failed="${failed}">${failed}</td><td>${p.meanReward === null ? '–' : p.meanReward.toFixed(3)}</td><td><progress max="${p.total}" value="${p.done}"></progress></td>`;
}

/** The most recently started batches with their status and progress. */
export function batchListPage(batches: readonly BatchSummary[]): Html {
  const rows = batches.map(
    (b) => html`<tr data-batch="${b.batchId}"><td><a href="${href(b.batchId)}">${b.batchId}</a></td><td>${b.status}</td><td>${b.startedAt?.toISOString() ?? ''}</td>${progressCells(b)}</tr>`,
  );
  return page(
    'batches',
    html`<h1>Batches</h1><table class="batches"><thead><tr><th>batch</th><th>status</th><th>started</th><th>done</th><th>running</th><th>failed (infra)</th><th>mean reward</th><th></th></tr></thead><tbody>${rows}</tbody></table>${
      batches.length === 0 ? html`<p class="muted">No batch workflows found.</p>` : ''
    }`,
  );
}
