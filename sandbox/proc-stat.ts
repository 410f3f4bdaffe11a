import { readFileSync } from 'node:fs';

/** The fields of `/proc/<pid>/stat` (proc(5)) read here. */
export interface ProcStat {
  /** R, S, D, Z, T, ... */
  state: string;
  ppid: number;
  pgrp: number;
  /** CPU time in user and kernel mode, clock ticks (`getconf CLK_TCK`, 100 on Linux). */
  utimeTicks: number;
  stimeTicks: number;
}

/**
 * A process's `/proc/<pid>/stat`, or undefined once it is gone. The command name is parenthesised
 * and may hold spaces and parentheses, so fields are counted after its last `)`. Read
 * synchronously: procfs never waits on a disk, and a trip to the thread pool costs more.
 */
export function procStat(pid: number | string): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: fields[0]!, ppid: Number(fields[1]), pgrp: Number(fields[2]), utimeTicks: Number(fields[11]), stimeTicks: Number(fields[12]) };
}

/** Whether the process still runs: a zombie does not (it holds no resources but its entry). */
export function isRunning(pid: number | string): boolean {
  return (procStat(pid)?.state ?? 'Z') !== 'Z';
}
