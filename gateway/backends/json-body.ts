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
  // Sized exactly (a first pass counts digits): the body is all that is allocated.
  let idBytes = Math.max(0, ids.length - 1);
  for (let i = 0; i < ids.length; i++) idBytes += idLength(ids[i]!);
  const out = Buffer.allocUnsafe(Buffer.byteLength(head) + idBytes + Buffer.byteLength(tail));
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

/** Token ids are whole and below 2^31 (vocabularies are far smaller); anything else is written as JSON writes it. */
function isPlainId(id: number): boolean {
  return (id | 0) === id && id >= 0;
}

/** Bytes `writeId` writes for `id`. */
function idLength(id: number): number {
  return isPlainId(id) ? decimalDigits(id) : JSON.stringify(id).length;
}

/** Writes one id's decimal digits at `at`; returns the offset after them. */
function writeId(out: Buffer, at: number, id: number): number {
  if (!isPlainId(id)) return at + out.write(JSON.stringify(id), at, 'latin1');
  const digits = decimalDigits(id);
  for (let i = at + digits - 1, rest = id; i >= at; i--) {
    const tenth = (rest / 10) | 0;
    out[i] = ZERO + rest - tenth * 10;
    rest = tenth;
  }
  return at + digits;
}

function decimalDigits(id: number): number {
  if (id < 1_000_000) return id < 10 ? 1 : id < 100 ? 2 : id < 1000 ? 3 : id < 10_000 ? 4 : id < 100_000 ? 5 : 6;
  let digits = 1;
  for (let rest = id; rest >= 10; rest = (rest / 10) | 0) digits++;
  return digits;
}
