/** Token arrays are stored as raw little-endian bytes: compact, and exact for int32 and float32. */
export function packInt32(values: readonly number[]): Buffer {
  const array = new Int32Array(values);
  return Buffer.from(array.buffer, array.byteOffset, array.byteLength);
}

export function unpackInt32(blob: Buffer): number[] {
  return toNumbers(new Int32Array(...alignedRange(blob)));
}

export function packFloat32(values: readonly number[]): Buffer {
  const array = new Float32Array(values);
  return Buffer.from(array.buffer, array.byteOffset, array.byteLength);
}

export function unpackFloat32(blob: Buffer): number[] {
  return toNumbers(new Float32Array(...alignedRange(blob)));
}

/**
 * The blob's bytes as (buffer, offset, length in 4-byte elements) a typed array can view in place:
 * better-sqlite3 gives each blob its own buffer, but pg may hand a slice at any offset, which is
 * copied first (a typed array's offset must be a multiple of its element size).
 */
function alignedRange(blob: Buffer): [ArrayBufferLike, number, number] {
  const bytes = blob.byteOffset % 4 === 0 ? blob : new Uint8Array(blob);
  return [bytes.buffer, bytes.byteOffset, bytes.byteLength / 4];
}

/** A plain array of the values: a preallocated loop is several times faster than `Array.from` on a typed array. */
function toNumbers(view: Int32Array | Float32Array): number[] {
  const values = new Array<number>(view.length);
  for (let i = 0; i < view.length; i++) values[i] = view[i]!;
  return values;
}
