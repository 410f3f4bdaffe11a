import { describe, expect, it } from 'vitest';
import type { BatchProgress } from '../../activities/types.js';
import { createProgressDisplay, type ProgressOutput } from '../../cli/progress-display.js';

function progress(ok: number, infraErrors: number, running: number): BatchProgress {
  const done = ok + infraErrors;
  return { batchId: 'b', total: 4, started: done + running, running, done, ok, infraErrors, queued: 4 - done - running, startedAtMs: 0, meanReward: ok ? 1 : null, groupsFinished: 0, stale: 0, exportFailed: 0 };
}

/** An output that keeps what is written, shaped like a terminal or a pipe. */
function output(isTTY: boolean, columns = 60): ProgressOutput & { text: string } {
  const out = { isTTY, columns, text: '', write: (s: string) => (out.text += s) };
  return out;
}

describe('the progress display on a pipe', () => {
  it('prints a line on every change of done or failed, else at most every plainEveryMs, and the summary', () => {
    let t = 0;
    const out = output(false);
    const display = createProgressDisplay(out, { plainEveryMs: 10_000, now: () => t });
    display.update(progress(0, 0, 1));
    t = 1_000;
    display.update(progress(0, 0, 2)); // only running changed, 1 s later: nothing
    t = 2_000;
    display.update(progress(1, 0, 2));
    t = 11_000;
    display.update(progress(1, 0, 2)); // 9 s since the last line: nothing
    t = 12_000;
    display.update(progress(1, 0, 3)); // 10 s: the line again
    t = 13_000;
    display.update(progress(1, 1, 2));
    t = 14_000;
    display.update(progress(3, 1, 0));
    display.finish({ interrupted: false });
    display.update(progress(3, 1, 0));
    display.finish({ interrupted: false });
    expect(out.text.split('\n')).toEqual([
      'b: 0 done, 1 running, 0 failed, 3 queued of 4; mean reward -; - episodes/min; - left',
      'b: 1 done, 2 running, 0 failed, 1 queued of 4; mean reward 1.00; 30.0 episodes/min; 0:06 left',
      'b: 1 done, 3 running, 0 failed, 0 queued of 4; mean reward 1.00; 5.0 episodes/min; 0:36 left',
      'b: 1 done, 2 running, 1 failed, 0 queued of 4; mean reward 1.00; 9.2 episodes/min; 0:13 left',
      'b: 3 done, 0 running, 1 failed, 0 queued of 4; mean reward 1.00; 17.1 episodes/min; 0:00 left',
      'b: ended, 3 done, 1 failed, 0 running, 0 queued of 4; mean reward 1.00; 17.1 episodes/min over 0:14',
      '',
    ]);
    expect(out.text).not.toContain('\x1b');
  });
});

describe('the progress display on a terminal', () => {
  it('hides the cursor, redraws the bar in place within the width less one column, and ends with a newline, the cursor and the summary', () => {
    const out = output(true, 40);
    const display = createProgressDisplay(out, { plainEveryMs: 10_000, now: () => 60_000 });
    display.update(progress(1, 0, 1));
    display.update(progress(2, 0, 0));
    display.finish({ interrupted: true });
    expect(out.text).toBe(
      `\x1b[?25l\r\x1b[2K[${'#'.repeat(8)}${'>'.repeat(9)}${'-'.repeat(16)}] 1/4` +
        `\r\x1b[2K[${'#'.repeat(17)}${'-'.repeat(16)}] 2/4` +
        '\n\x1b[?25h' +
        'b: interrupted at 2 done, 0 failed, 0 running, 2 queued of 4; mean reward 1.00; 2.0 episodes/min over 1:00\n',
    );
  });

  it('writes nothing when no progress ever came', () => {
    const out = output(true);
    createProgressDisplay(out, { plainEveryMs: 1_000 }).finish({ interrupted: false });
    expect(out.text).toBe('');
  });
});
