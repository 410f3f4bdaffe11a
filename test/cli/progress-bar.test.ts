import { describe, expect, it } from 'vitest';
import type { BatchProgress } from '../../activities/types.js';
import { formatDuration, progressView, renderBar, renderLine, renderSummary } from '../../cli/progress-bar.js';

/** 8 episodes 90 s in: 2 done, 1 failed, 2 running, 3 queued. */
const midway: BatchProgress = {
  batchId: 'b1',
  total: 8,
  started: 5,
  running: 2,
  done: 3,
  ok: 2,
  infraErrors: 1,
  queued: 3,
  startedAtMs: 1_000_000,
  meanReward: 0.5,
  groupsFinished: 0,
  stale: 0,
  exportFailed: 0,
};
const view = progressView(midway, 1_090_000);
const fresh = progressView({ ...midway, running: 0, done: 0, ok: 0, infraErrors: 0, queued: 8, meanReward: null }, 1_001_000);

describe('progress view', () => {
  it('takes done, failed, running and queued from the query, and derives throughput and time left', () => {
    expect(view).toEqual({ batchId: 'b1', total: 8, done: 2, running: 2, failed: 1, queued: 3, meanReward: 0.5, perMinute: 2, secondsLeft: 150, elapsedSeconds: 90 });
    expect(view.done + view.running + view.failed + view.queued).toBe(view.total);
  });

  it('knows no throughput or time left before an episode ends', () => {
    expect(fresh.perMinute).toBeNull();
    expect(fresh.secondsLeft).toBeNull();
  });

  it('has nothing left once every episode ended', () => {
    const ended = progressView({ ...midway, running: 0, done: 8, ok: 7, infraErrors: 1, queued: 0 }, 1_120_000);
    expect(ended.secondsLeft).toBe(0);
    expect(ended.perMinute).toBe(4);
  });
});

describe('the bar', () => {
  it('fills a wide terminal with the bar at its widest and every field', () => {
    expect(renderBar(view, 200)).toBe('[##########xxxxx>>>>>>>>>>---------------] 3/8  2 done 2 running 1 failed  reward 0.50  2.0/min  left 2:30');
  });

  it('fits 79 columns exactly, the bar taking what the fields leave', () => {
    const line = renderBar(view, 79);
    expect(line).toBe('[###xx>>>-----] 3/8  2 done 2 running 1 failed  reward 0.50  2.0/min  left 2:30');
    expect(line).toHaveLength(79);
  });

  it('drops fields from the end on a narrower terminal, keeping the bar', () => {
    expect(renderBar(view, 60)).toBe('[####x>>>>-----] 3/8  2 done 2 running 1 failed  reward 0.50');
    expect(renderBar(view, 30)).toBe('[######xxx>>>>>>---------] 3/8');
  });

  it('drops the bar below its narrowest and cuts the count last', () => {
    expect(renderBar(view, 15)).toBe('3/8');
    expect(renderBar(view, 2)).toBe('3/');
  });

  it('never writes past the width', () => {
    for (let width = 1; width <= 150; width++) expect(renderBar(view, width).length).toBeLessThanOrEqual(width);
  });

  it("shows '-' for what is not known yet", () => {
    expect(renderBar(fresh, 79)).toBe('[---------------------] 0/8  0 done 0 running 0 failed  reward -  -/min  left -');
  });
});

describe('plain lines and the summary', () => {
  it('label every field', () => {
    expect(renderLine(view)).toBe('b1: 2 done, 2 running, 1 failed, 3 queued of 8; mean reward 0.50; 2.0 episodes/min; 2:30 left');
    expect(renderLine(fresh)).toBe('b1: 0 done, 0 running, 0 failed, 8 queued of 8; mean reward -; - episodes/min; - left');
  });

  it('close with the counts, saying whether the wait was interrupted', () => {
    expect(renderSummary(view, false)).toBe('b1: ended, 2 done, 1 failed, 2 running, 3 queued of 8; mean reward 0.50; 2.0 episodes/min over 1:30');
    expect(renderSummary(view, true)).toBe('b1: interrupted at 2 done, 1 failed, 2 running, 3 queued of 8; mean reward 0.50; 2.0 episodes/min over 1:30');
  });

  it('format durations as m:ss and h:mm:ss', () => {
    expect([formatDuration(null), formatDuration(0), formatDuration(65.4), formatDuration(3723)]).toEqual(['-', '0:00', '1:05', '1:02:03']);
  });
});
