/**
 * What makes a canary look like the tests around it: names built from the words of the file's own
 * test names, and values drawn from the literals the file itself uses. Nothing here has a fixed
 * shape (length, alphabet, prefix) that code under test could recognise a canary by.
 */
import type { Random } from './canary.js';

/** A random integer in [0, n). */
export function below(random: Random, n: number): number {
  return n <= 1 ? 0 : random(4).readUInt32LE(0) % n;
}

export function pick<T>(random: Random, items: readonly T[]): T {
  return items[below(random, items.length)]!;
}

/** Words of an identifier or title: `test_adds_twoNumbers` → test, adds, two, Numbers. */
export function wordsOf(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .filter((w) => /^[A-Za-z][A-Za-z0-9]*$/.test(w));
}

/**
 * A name made of `vocabulary` words, as many as one of `lengths` (the word counts of the file's
 * names), joined by `join`, and taken by no name in `taken` (which it is added to).
 */
export function freshName(
  random: Random,
  vocabulary: string[],
  lengths: number[],
  join: (words: string[]) => string,
  taken: Set<string>,
): string {
  const words = vocabulary.length > 0 ? vocabulary : ['value', 'check', 'result', 'case'];
  let count = Math.max(1, pick(random, lengths.length > 0 ? lengths : [2, 3]));
  for (let attempt = 0; ; attempt++) {
    // Few words can make few names: every 20 failed draws allow one word more.
    if (attempt > 0 && attempt % 20 === 0) count++;
    // Distinct words while there are enough, as names rarely repeat a word.
    const pool = [...words];
    const drawn = Array.from({ length: count }, () =>
      pool.length > 0 ? pool.splice(below(random, pool.length), 1)[0]! : pick(random, words),
    );
    const name = join(drawn);
    if (!taken.has(name)) {
      taken.add(name);
      return name;
    }
  }
}

export interface Literals {
  /** Distinct integer literals of the file, as written. */
  numbers: number[];
  /** Distinct string literals of the file that need no escaping in either quote. */
  strings: string[];
}

const NUMBER = /(?<![\w.])-?\d{1,9}(?![\w.])/g;
const STRING = /'([\w .,:/-]{1,40})'|"([\w .,:/-]{1,40})"/g;

/** The integer and plain string literals in `source`. */
export function literalsOf(source: string): Literals {
  const numbers = new Set<number>();
  for (const m of source.matchAll(NUMBER)) numbers.add(Number(m[0]));
  const strings = new Set<string>();
  for (const m of source.matchAll(STRING)) strings.add(m[1] ?? m[2]!);
  return { numbers: [...numbers], strings: [...strings] };
}

/** Two different numbers of the file, smaller first; made up from one or none when it has fewer. */
export function numberPair(random: Random, literals: Literals): [number, number] {
  const pool = literals.numbers;
  const a = pool.length > 0 ? pick(random, pool) : below(random, 100);
  const others = pool.filter((n) => n !== a);
  const b = others.length > 0 ? pick(random, others) : a + 1 + below(random, 9);
  return a < b ? [a, b] : [b, a];
}

/** Two different strings of the file; made up from its words when it has fewer. */
export function stringPair(random: Random, literals: Literals, words: string[]): [string, string] {
  const pool = literals.strings.length > 0 ? literals.strings : words.length > 0 ? words : ['x'];
  const a = pick(random, pool);
  const others = pool.filter((s) => s !== a);
  const b =
    others.length > 0
      ? pick(random, others)
      : `${a} ${pick(random, words.length > 0 ? words : ['y'])}`;
  return [a, b];
}
