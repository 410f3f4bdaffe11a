import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { procStat } from '../../sandbox/proc-stat.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'proc-stat-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('procStat', () => {
  it("reads a process's state, parent, group and CPU ticks, whatever its command name holds", async () => {
    // A command name with a space and a parenthesis: the fields are counted after its last `)`.
    const odd = path.join(dir, 'a) b (c');
    copyFileSync('/bin/sleep', odd);
    const child = spawn(odd, ['30'], { stdio: 'ignore', detached: true });
    try {
      await new Promise((resolve) => child.once('spawn', resolve));
      const stat = procStat(child.pid!);
      expect(stat).toMatchObject({ ppid: process.pid, pgrp: child.pid });
      expect(['R', 'S']).toContain(stat!.state);
      expect(stat!.utimeTicks + stat!.stimeTicks).toBeGreaterThanOrEqual(0);
      // This process has used CPU (it loaded the test): its own ticks are counted.
      const self = procStat(process.pid)!;
      expect(self.ppid).toBe(process.ppid);
      expect(self.utimeTicks + self.stimeTicks).toBeGreaterThan(0);
    } finally {
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('exit', resolve));
    }
    // Reaped: gone.
    expect(procStat(child.pid!)).toBeUndefined();
  });
});
