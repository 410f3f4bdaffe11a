/** One attack and what stopped it; `defence` is named from evidence, not assumed. */
export interface AttackOutcome {
  attack: string;
  blocked: boolean;
  defence: string;
}

/** Prints the suite's attack → defence table. */
export function printAttackTable(title: string, rows: AttackOutcome[]): void {
  const width = Math.max(...rows.map((r) => r.attack.length), 6);
  const lines = rows.map(
    (r) => `${r.attack.padEnd(width)}  ${r.blocked ? 'blocked' : 'NOT BLOCKED'}  ${r.defence}`,
  );
  console.log([`${title}`, `${'attack'.padEnd(width)}  result   defence`, ...lines].join('\n'));
}
