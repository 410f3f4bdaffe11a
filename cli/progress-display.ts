import type { BatchProgress } from '../activities/types.js';
import { progressView, renderBar, renderLine, renderSummary, type ProgressView } from './progress-bar.js';

/** Where the display writes: process.stdout, or anything shaped like it. */
export interface ProgressOutput {
  write(text: string): unknown;
  /** A terminal gets the bar redrawn in place; anything else gets plain lines. */
  isTTY?: boolean;
  /** Terminal width (default 80, also when a pseudo-terminal reports 0). */
  columns?: number;
}

export interface ProgressDisplayOptions {
  /** Off a terminal, the longest gap between two plain lines while the counts stand still. */
  plainEveryMs: number;
  /** Default Date.now. */
  now?: () => number;
}

export interface ProgressDisplay {
  update(p: BatchProgress): void;
  /** Ends the display (idempotent): the bar's line closed, the cursor back, the summary line printed. */
  finish(options: { interrupted: boolean }): void;
}

const HIDE_CURSOR = '\x1b[?25l';
const SHOW_CURSOR = '\x1b[?25h';
/** Back to column 0 and clear the line: the bar is redrawn over itself. */
const REDRAW = '\r\x1b[2K';

/** The live progress of one batch on `out`: a bar redrawn in place on a terminal, plain lines otherwise. */
export function createProgressDisplay(out: ProgressOutput, options: ProgressDisplayOptions): ProgressDisplay {
  const now = options.now ?? Date.now;
  const tty = out.isTTY === true;
  let last: ProgressView | null = null;
  let drawn = false;
  let printed: { done: number; failed: number; atMs: number } | null = null;
  let finished = false;

  const draw = (view: ProgressView) => {
    // The last column stays free: writing into it makes some terminals wrap.
    const width = Math.max(1, (out.columns || 80) - 1);
    out.write(`${drawn ? '' : HIDE_CURSOR}${REDRAW}${renderBar(view, width)}`);
    drawn = true;
  };

  const print = (view: ProgressView) => {
    const t = now();
    const changed = !printed || printed.done !== view.done || printed.failed !== view.failed;
    if (!changed && t - printed!.atMs < options.plainEveryMs) return;
    out.write(`${renderLine(view)}\n`);
    printed = { done: view.done, failed: view.failed, atMs: t };
  };

  return {
    update(p) {
      if (finished) return;
      last = progressView(p, now());
      if (tty) draw(last);
      else print(last);
    },
    finish({ interrupted }) {
      if (finished) return;
      finished = true;
      if (drawn) out.write(`\n${SHOW_CURSOR}`);
      if (last) out.write(`${renderSummary(last, interrupted)}\n`);
    },
  };
}
