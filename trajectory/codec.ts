/** Token arrays are stored as raw little-endian bytes: compact, and exact for int32 and float32. */
export function packInt32(values: readonly number[]): Buffer {
  const array = Int32Array.from(values);
  return Buffer.from(array.buffer, array.byteOffset, array.byteLength);
}

export function unpackInt32(blob: Buffer): number[] {
  const copy = new Uint8Array(blob);
  return Array.from(new Int32Array(copy.buffer, 0, copy.byteLength / 4));
}

export function packFloat32(values: readonly number[]): Buffer {
  const array = Float32Array.from(values);
  return Buffer.from(array.buffer, array.byteOffset, array.byteLength);
}

export function unpackFloat32(blob: Buffer): number[] {
  const copy = new Uint8Array(blob);
  return Array.from(new Float32Array(copy.buffer, 0, copy.byteLength / 4));
}
