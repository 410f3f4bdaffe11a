import type { BatchProgress } from '../activities/types.js';

/** What the progress display shows of a batch at one moment; every count from the `progress` query. */
export interface ProgressView {
  batchId: string;
  total: number;
  /** Episodes ended with a reward. */
  done: number;
  running: number;
  /** Episodes ended without a reward (infra error, stale, cancelled). */
  failed: number;
  queued: number;
  meanReward: number | null;
  /** Episodes ended per minute since the batch started; null until one has ended. */
  perMinute: number | null;
  /** Estimated from `perMinute`; null while it is unknown. */
  secondsLeft: number | null;
  elapsedSeconds: number;
}

/** The view of a `progress` answer at `nowMs` (the batch's throughput runs from its `startedAtMs`). */
export function progressView(p: BatchProgress, nowMs: number): ProgressView {
  const elapsedSeconds = Math.max(0, (nowMs - p.startedAtMs) / 1000);
  const perMinute = p.done > 0 && elapsedSeconds > 0 ? (p.done / elapsedSeconds) * 60 : null;
  const left = p.total - p.done;
  return {
    batchId: p.batchId,
    total: p.total,
    done: p.ok,
    running: p.running,
    failed: p.infraErrors,
    queued: p.queued,
    meanReward: p.meanReward,
    perMinute,
    secondsLeft: perMinute === null ? null : left === 0 ? 0 : (left / perMinute) * 60,
    elapsedSeconds,
  };
}

/** `1:05`, `1:02:03`; `-` when unknown. */
export function formatDuration(seconds: number | null): string {
  if (seconds === null) return '-';
  const s = Math.round(seconds);
  const hours = Math.floor(s / 3600);
  const minutes = Math.floor((s % 3600) / 60);
  const rest = String(s % 60).padStart(2, '0');
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, '0')}:${rest}` : `${minutes}:${rest}`;
}

const reward = (v: ProgressView) => (v.meanReward === null ? '-' : v.meanReward.toFixed(2));
const rate = (v: ProgressView) => (v.perMinute === null ? '-' : v.perMinute.toFixed(1));

/** The fields of the bar, most important first: a narrow terminal drops them from the end. */
function barFields(v: ProgressView): string[] {
  return [
    `${v.done + v.failed}/${v.total}`,
    `${v.done} done ${v.running} running ${v.failed} failed`,
    `reward ${reward(v)}`,
    `${rate(v)}/min`,
    `left ${formatDuration(v.secondsLeft)}`,
  ];
}

/** Narrowest and widest bar, brackets included. */
const MIN_BAR = 12;
const MAX_BAR = 42;

/**
 * The bar proper: `#` done, `x` failed, `>` running, `-` queued, each in proportion to its count
 * (rounded so the four fill the width exactly).
 */
function bar(v: ProgressView, inner: number): string {
  const parts: [string, number][] = [
    ['#', v.done],
    ['x', v.failed],
    ['>', v.running],
    ['-', v.queued],
  ];
  const total = Math.max(1, v.total);
  let drawn = '';
  let before = 0;
  for (const [glyph, count] of parts) {
    before += count;
    const end = Math.round((before / total) * inner);
    drawn += glyph.repeat(Math.max(0, end - drawn.length));
  }
  return `[${drawn.padEnd(inner, '-')}]`;
}

/** As many of `fields` as fit in `width`, in order; the first one always, cut to `width`. */
function fitFields(fields: string[], width: number): string {
  let text = fields[0]!;
  for (const field of fields.slice(1)) {
    if (text.length + 2 + field.length > width) break;
    text += `  ${field}`;
  }
  return text.slice(0, Math.max(0, width));
}

/**
 * One terminal line of at most `width` columns: a bar, when at least the narrowest fits beside
 * the first field, then as many fields as fit; the bar takes what room the fields leave.
 */
export function renderBar(v: ProgressView, width: number): string {
  const fields = barFields(v);
  if (width < MIN_BAR + 1 + fields[0]!.length) return fitFields(fields, width);
  const text = fitFields(fields, width - MIN_BAR - 1);
  return `${bar(v, Math.min(MAX_BAR, width - text.length - 1) - 2)} ${text}`;
}

/** One plain line for logs and pipes: every field, labelled. */
export function renderLine(v: ProgressView): string {
  return `${v.batchId}: ${v.done} done, ${v.running} running, ${v.failed} failed, ${v.queued} queued of ${v.total}; mean reward ${reward(v)}; ${rate(v)} episodes/min; ${formatDuration(v.secondsLeft)} left`;
}

/** The closing line: how the batch ended, whatever was shown before. */
export function renderSummary(v: ProgressView, interrupted: boolean): string {
  const head = interrupted ? `${v.batchId}: interrupted at` : `${v.batchId}: ended,`;
  return `${head} ${v.done} done, ${v.failed} failed, ${v.running} running, ${v.queued} queued of ${v.total}; mean reward ${reward(v)}; ${rate(v)} episodes/min over ${formatDuration(v.elapsedSeconds)}`;
}
