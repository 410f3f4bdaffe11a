const COMMA = 0x2c;
const ZERO = 0x30;
/**
 * Ids below this (six digits and a comma) cover every vocabulary there is, so a buffer sized for
 * them is barely larger than the body.
 */
const SHORT_ID_LIMIT = 1_000_000;
const SHORT_ID_BYTES = 7;
/** `PAIRS[2n]`, `PAIRS[2n + 1]`: the two decimal digits of n < 100, so one division writes two. */
const PAIRS = Uint8Array.from({ length: 200 }, (_, i) => ZERO + (i % 2 === 0 ? Math.floor(i / 20) : (i >> 1) % 10));

/**
 * `JSON.stringify({...before, [key]: ids, ...after})` as UTF-8 bytes, with the ids written straight
 * into the buffer: a 30k-token prompt is not turned into an array of strings and one big string
 * on every request. `key` must not be a key of `before` or `after`.
 */
export function jsonBodyWithIds(
  before: Record<string, unknown>,
  key: string,
  ids: ArrayLike<number>,
  after: Record<string, unknown>,
): Uint8Array<ArrayBuffer> {
  const head = `${jsonMembers(before, '{', ',')}${JSON.stringify(key)}:[`;
  const tail = `]${jsonMembers(after, ',', '')}}`;
  return ids instanceof Uint32Array ? withUint32Ids(head, ids, tail) : withIds(head, ids, tail);
}

/**
 * The prompt as the chains hold it: whole numbers, written as their digits in one pass into a
 * buffer sized for ids below SHORT_ID_LIMIT (the body is used once and dropped); a longer id sends
 * the prompt the exact-size way instead.
 */
function withUint32Ids(head: string, ids: Uint32Array, tail: string): Uint8Array<ArrayBuffer> {
  const out = Buffer.allocUnsafe(Buffer.byteLength(head) + ids.length * SHORT_ID_BYTES + Buffer.byteLength(tail));
  let at = out.write(head, 0);
  const count = ids.length;
  for (let i = 0; i < count; i++) {
    const id = ids[i]!;
    if (id >= SHORT_ID_LIMIT) return withIds(head, ids, tail);
    if (i > 0) out[at++] = COMMA;
    at = writeDigits(out, at, id);
  }
  at += out.write(tail, at);
  return new Uint8Array(out.buffer, out.byteOffset, at);
}

/** Any other array: sized exactly (a first pass counts digits), and odd numbers written as JSON writes them. */
function withIds(head: string, ids: ArrayLike<number>, tail: string): Uint8Array<ArrayBuffer> {
  let idBytes = Math.max(0, ids.length - 1);
  for (let i = 0; i < ids.length; i++) idBytes += idLength(ids[i]!);
  const out = Buffer.allocUnsafe(Buffer.byteLength(head) + idBytes + Buffer.byteLength(tail));
  let at = out.write(head, 0);
  for (let i = 0; i < ids.length; i++) {
    if (i > 0) out[at++] = COMMA;
    const id = ids[i]!;
    at = isPlainId(id) ? writeDigits(out, at, id) : at + out.write(JSON.stringify(id), at, 'latin1');
  }
  at += out.write(tail, at);
  return new Uint8Array(out.buffer, out.byteOffset, at);
}

/** An object's members as JSON text between `open` and `close` (nothing for an empty object). */
function jsonMembers(members: Record<string, unknown>, open: string, close: string): string {
  const json = JSON.stringify(members);
  return json === '{}' ? (open === '{' ? '{' : '') : `${open}${json.slice(1, -1)}${close}`;
}

/** Token ids are whole and below 2^31 (vocabularies are far smaller); anything else is written as JSON writes it. */
function isPlainId(id: number): boolean {
  return (id | 0) === id && id >= 0;
}

/** Bytes `withIds` writes for `id`. */
function idLength(id: number): number {
  return isPlainId(id) ? decimalDigits(id) : JSON.stringify(id).length;
}

/** Writes the decimal digits of `id` (a whole number below 2^32) at `at`; returns the offset after them. */
function writeDigits(out: Buffer, at: number, id: number): number {
  const end = at + decimalDigits(id);
  let i = end;
  let rest = id;
  while (rest >= 100) {
    const hundredth = (rest / 100) >>> 0;
    const pair = 2 * (rest - hundredth * 100);
    out[--i] = PAIRS[pair + 1]!;
    out[--i] = PAIRS[pair]!;
    rest = hundredth;
  }
  if (rest >= 10) {
    out[--i] = PAIRS[2 * rest + 1]!;
    out[--i] = PAIRS[2 * rest]!;
  } else {
    out[--i] = ZERO + rest;
  }
  return end;
}

function decimalDigits(id: number): number {
  if (id < 100_000) return id < 10 ? 1 : id < 100 ? 2 : id < 1000 ? 3 : id < 10_000 ? 4 : 5;
  if (id < 10_000_000) return id < 1_000_000 ? 6 : 7;
  return id < 100_000_000 ? 8 : id < 1_000_000_000 ? 9 : 10;
}
