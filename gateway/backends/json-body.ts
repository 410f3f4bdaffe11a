/** Widest decimal token id: 2^32 - 1 has 10 digits, plus its comma. */
const MAX_ID_BYTES = 11;
const COMMA = 0x2c;
const ZERO = 0x30;

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
  const headBytes = Buffer.byteLength(head);
  const out = Buffer.allocUnsafe(headBytes + ids.length * MAX_ID_BYTES + Buffer.byteLength(tail));
  let at = out.write(head, 0);
  for (let i = 0; i < ids.length; i++) {
    if (i > 0) out[at++] = COMMA;
    at = writeId(out, at, ids[i]!);
  }
  at += out.write(tail, at);
  return new Uint8Array(out.buffer, out.byteOffset, at);
}

/** An object's members as JSON text between `open` and `close` (nothing for an empty object). */
function jsonMembers(members: Record<string, unknown>, open: string, close: string): string {
  const json = JSON.stringify(members);
  return json === '{}' ? (open === '{' ? '{' : '') : `${open}${json.slice(1, -1)}${close}`;
}

/** Writes one id's decimal digits at `at`; returns the offset after them. */
function writeId(out: Buffer, at: number, id: number): number {
  // Token ids are whole and unsigned 32-bit; anything else is written as JSON writes it.
  if (id >>> 0 !== id) return at + out.write(JSON.stringify(id), at, 'latin1');
  if (id < 10) {
    out[at] = ZERO + id;
    return at + 1;
  }
  let digits = 1;
  for (let rest = id; rest >= 10; rest = Math.floor(rest / 10)) digits++;
  for (let i = at + digits - 1, rest = id; i >= at; i--, rest = Math.floor(rest / 10)) out[i] = ZERO + (rest % 10);
  return at + digits;
}
