import { html, type Html } from './html.js';

/**
 * Small inline SVG plots. Each data point is one `<circle data-point>` and each bar one
 * `<rect data-bar>`, with its value in data- attributes and a `<title>` for hover.
 */

const WIDTH = 640;
const MARGIN = { left: 160, right: 20, top: 10, bottom: 30 };

export interface PlotPoint {
  x: number;
  y: number;
  /** What the point is (an episode id), kept in `data-key`. */
  key: string;
  /** Hover text. */
  label: string;
  /** Where a click on the point leads. */
  href?: string;
}

function scale(value: number, [lo, hi]: readonly [number, number], from: number, to: number): number {
  return hi === lo ? (from + to) / 2 : from + ((value - lo) / (hi - lo)) * (to - from);
}

function extent(values: readonly number[]): [number, number] {
  if (values.length === 0) return [0, 1];
  return [Math.min(0, ...values), Math.max(...values)];
}

const fixed = (n: number) => Number(n.toFixed(1));

function pointMark(cx: number, cy: number, p: PlotPoint): Html {
  const circle = html`<circle cx="${fixed(cx)}" cy="${fixed(cy)}" r="4" class="pt" data-point="" data-key="${p.key}" data-x="${p.x}" data-y="${p.y}"><title>${p.label}</title></circle>`;
  return p.href ? html`<a href="${p.href}">${circle}</a>` : circle;
}

function axisLabels(xLabel: string, yLabel: string, height: number): Html {
  return html`<text x="${MARGIN.left + (WIDTH - MARGIN.left - MARGIN.right) / 2}" y="${height - 6}" class="axis">${xLabel}</text><text x="4" y="${MARGIN.top + 12}" class="axis">${yLabel}</text>`;
}

/** One row of points per category (reward per task): x is the value, rows are spread vertically. */
export function stripPlot(name: string, rows: readonly { label: string; points: readonly PlotPoint[] }[], xLabel: string): Html {
  const rowHeight = 28;
  const height = MARGIN.top + MARGIN.bottom + rowHeight * Math.max(1, rows.length);
  const xs = extent(rows.flatMap((r) => r.points.map((p) => p.x)));
  const marks = rows.map((row, r) => {
    const y0 = MARGIN.top + r * rowHeight;
    return html`<text x="4" y="${y0 + rowHeight / 2 + 4}" class="cat">${row.label}</text>${row.points.map((p, i) =>
      // A deterministic spread inside the row, so equal values stay countable by eye.
      pointMark(scale(p.x, xs, MARGIN.left, WIDTH - MARGIN.right), y0 + 6 + ((i * 7) % (rowHeight - 12)), p),
    )}`;
  });
  return html`<svg class="plot" data-plot="${name}" viewBox="0 0 ${WIDTH} ${height}" width="${WIDTH}" height="${height}" role="img">${marks}<text x="${MARGIN.left}" y="${height - 6}" class="axis">${xs[0]}</text><text x="${WIDTH - MARGIN.right - 20}" y="${height - 6}" class="axis">${xs[1]}</text>${axisLabels(xLabel, '', height)}</svg>`;
}

/** A scatter plot of x against y. */
export function scatterPlot(name: string, points: readonly PlotPoint[], xLabel: string, yLabel: string): Html {
  const height = 260;
  const xs = extent(points.map((p) => p.x));
  const ys = extent(points.map((p) => p.y));
  const marks = points.map((p) => pointMark(scale(p.x, xs, MARGIN.left, WIDTH - MARGIN.right), scale(p.y, ys, height - MARGIN.bottom, MARGIN.top), p));
  return html`<svg class="plot" data-plot="${name}" viewBox="0 0 ${WIDTH} ${height}" width="${WIDTH}" height="${height}" role="img"><line x1="${MARGIN.left}" y1="${height - MARGIN.bottom}" x2="${WIDTH - MARGIN.right}" y2="${height - MARGIN.bottom}" class="axis-line"/><text x="${MARGIN.left - 40}" y="${MARGIN.top + 10}" class="axis">${ys[1]}</text><text x="${WIDTH - MARGIN.right - 40}" y="${height - 16}" class="axis">${xs[1]}</text>${marks}${axisLabels(xLabel, yLabel, height)}</svg>`;
}

/** Room right of the longest bar for its text. */
const BAR_TEXT = 190;

export interface Bar {
  label: string;
  value: number;
  /** Shown after the bar instead of the value. */
  text?: string;
}

/** Horizontal bars, one per label. */
export function barChart(name: string, bars: readonly Bar[], xLabel: string): Html {
  const barHeight = 22;
  const height = MARGIN.top + MARGIN.bottom + barHeight * Math.max(1, bars.length);
  const max = Math.max(0, ...bars.map((b) => b.value));
  const marks = bars.map((bar, i) => {
    const y = MARGIN.top + i * barHeight;
    const w = max > 0 ? ((WIDTH - MARGIN.left - MARGIN.right - BAR_TEXT) * bar.value) / max : 0;
    return html`<text x="4" y="${y + 15}" class="cat">${bar.label}</text><rect x="${MARGIN.left}" y="${y + 3}" width="${fixed(Math.max(w, 1))}" height="${barHeight - 6}" class="bar" data-bar="" data-label="${bar.label}" data-value="${bar.value}"><title>${bar.label}: ${bar.text ?? bar.value}</title></rect><text x="${fixed(MARGIN.left + Math.max(w, 1) + 4)}" y="${y + 15}" class="val">${bar.text ?? bar.value}</text>`;
  });
  return html`<svg class="plot" data-plot="${name}" viewBox="0 0 ${WIDTH} ${height}" width="${WIDTH}" height="${height}" role="img">${marks}${axisLabels(xLabel, '', height)}</svg>`;
}
