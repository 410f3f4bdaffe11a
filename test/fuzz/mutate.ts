import type { Prng } from './prng.js';

/**
 * Mutations of a valid JSON request: structural ones on the parsed value (drop, duplicate or
 * retype a field, huge strings, wide arrays, deep nesting) and textual ones on the encoded body
 * (truncation, random bytes). Deep nesting is spliced into the text: building it as a value would
 * overflow this process's own `JSON.stringify`.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Container = Json[] | { [key: string]: Json };

/** Stands for a nested value in the tree until the text is encoded. */
const DEEP_MARK = '\u0001deep:';

/** `{"a":{"a":…}}` or `[[…]]`, `depth` deep. */
export function nestedJson(depth: number, kind: 'array' | 'object'): string {
  return kind === 'array' ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '0' + '}'.repeat(depth);
}

/** Every container of the tree with the keys of its children, found without recursion. */
function containers(root: Json): { node: Container; keys: (string | number)[] }[] {
  const out: { node: Container; keys: (string | number)[] }[] = [];
  const stack: Json[] = [root];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    const keys = Array.isArray(node) ? node.map((_, i) => i) : Object.keys(node);
    out.push({ node, keys });
    for (const key of keys) stack.push((node as Record<string | number, Json>)[key]!);
  }
  return out;
}

function randomValue(rng: Prng): Json {
  switch (rng.int(0, 11)) {
    case 0:
      return null;
    case 1:
      return rng.chance(0.5);
    case 2:
      return rng.pick([0, -1, 1.5, 2 ** 53, -(2 ** 63), 1e308, -0]);
    case 3:
      return rng.awkward();
    case 4:
      return [];
    case 5:
      return {};
    case 6:
      return [rng.awkward(), rng.int(-5, 5)];
    case 7:
      return { [rng.awkward()]: rng.awkward() };
    case 8:
      // Long texts are words: a long run without spaces costs the BPE tokenizer quadratic time
      // (64 KiB of one letter ~1.5 s, 1 MiB ~27 s), which would make the fuzz time the tokenizer.
      return rng.chance(0.5) ? 'x'.repeat(rng.pick([256, 4096])) : 'word '.repeat(rng.pick([1_000, 20_000]));
    case 9:
      return Array.from({ length: rng.pick([1_001, 10_001, 20_000]) }, () => rng.pick<Json>([0, 'a', {}, null]));
    case 10:
      return `${DEEP_MARK}${rng.pick(['object', 'array'])}:${rng.pick([63, 64, 65, 200, 5_000, 10_000, 50_000])}`;
    default:
      return { role: rng.pick(['user', 'assistant', 'tool', 'system', 'x']), content: rng.awkward(), type: rng.pick(['text', 'tool_use', 'message', 'function_call']) };
  }
}

/** One structural mutation somewhere in the tree (the root itself only when `root` allows it). */
function mutateOnce(rng: Prng, value: Json, root: boolean): Json {
  if (root && rng.chance(0.05)) return randomValue(rng);
  const all = containers(value);
  if (all.length === 0) return value;
  const { node, keys } = rng.pick(all);
  const key = keys.length > 0 ? rng.pick(keys) : undefined;
  const op = rng.int(0, 4);
  if (Array.isArray(node)) {
    const i = key as number | undefined;
    if (op === 0 && i !== undefined) node.splice(i, 1);
    else if (op === 1 && i !== undefined) node.splice(i, 0, structuredClone(node[i]!));
    else if (i !== undefined) node[i] = randomValue(rng);
    else node.push(randomValue(rng));
  } else {
    const k = key as string | undefined;
    if (op === 0 && k !== undefined) delete node[k];
    else if (op === 1 && k !== undefined) node[`${k}${rng.awkward()}`] = structuredClone(node[k]!);
    else if (op === 2) node[rng.pick(['__proto__', 'constructor', 'stream', 'n', rng.awkward()])] = randomValue(rng);
    else if (k !== undefined) node[k] = randomValue(rng);
  }
  return value;
}

/** A template with one to three structural mutations. */
export function mutateValue(rng: Prng, template: unknown, options: { root: boolean }): unknown {
  let value = structuredClone(template) as Json;
  for (let n = rng.int(1, 3); n > 0; n--) value = mutateOnce(rng, value, options.root);
  return value;
}

/** The JSON text of a mutated value, deep markers replaced by their nesting. */
export function encode(value: unknown): string {
  const text = JSON.stringify(value) ?? 'null';
  if (!text.includes(DEEP_MARK.slice(1))) return text;
  return text.replace(/"\\u0001deep:(object|array):(\d+)"/g, (_, kind: 'array' | 'object', depth: string) => nestedJson(Number(depth), kind));
}

/** A textual mutation of an encoded body: truncated, or random bytes inserted or instead. */
export function mutateText(rng: Prng, text: string, options: { onlyTruncate: boolean }): Buffer {
  const bytes = Buffer.from(text);
  const op = options.onlyTruncate ? 0 : rng.int(0, 3);
  // At least one byte is kept: an empty body without a content type reads as `{}` on the API.
  const at = rng.int(options.onlyTruncate ? 1 : 0, Math.max(1, bytes.length - 1));
  if (op === 0) return bytes.subarray(0, at);
  if (op === 1) return Buffer.concat([bytes.subarray(0, at), rng.bytes(rng.int(1, 16)), bytes.subarray(at)]);
  if (op === 2) return rng.bytes(rng.int(1, 4096));
  return Buffer.concat([Buffer.from('\ufeff'), bytes]);
}
