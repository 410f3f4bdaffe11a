import { describe, expect, it } from 'vitest';
import { packFloat32, packInt32, unpackFloat32, unpackInt32 } from '../../trajectory/codec.js';

/** The reference encoding, one value at a time: 4 little-endian bytes each. */
function littleEndian(values: number[], kind: 'int32' | 'float32'): Buffer {
  const bytes = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => (kind === 'int32' ? bytes.writeInt32LE(v, i * 4) : bytes.writeFloatLE(v, i * 4)));
  return bytes;
}

/** `bytes` copied to `offset` inside a larger buffer, as pg hands a bytea slice of its read buffer. */
function sliceAt(bytes: Buffer, offset: number): Buffer {
  const backing = Buffer.alloc(offset + bytes.length + 3, 0xab);
  bytes.copy(backing, offset);
  return backing.subarray(offset, offset + bytes.length);
}

const IDS = [0, 1, 256, -2, 151_643, 2 ** 31 - 1, -(2 ** 31)];
const LOGPROBS = [0, -0.25, -1e-7, -17.5, -0.1, Number.NEGATIVE_INFINITY];

describe('token array codec', () => {
  it('packs int32 and float32 values as little-endian bytes', () => {
    expect(packInt32(IDS)).toEqual(littleEndian(IDS, 'int32'));
    expect(packFloat32(LOGPROBS)).toEqual(littleEndian(LOGPROBS, 'float32'));
    expect(packInt32([])).toEqual(Buffer.alloc(0));
  });

  it('unpacks what it packed: ids exactly, log-probs as their float32 values', () => {
    expect(unpackInt32(packInt32(IDS))).toEqual(IDS);
    expect(unpackFloat32(packFloat32(LOGPROBS))).toEqual(LOGPROBS.map((v) => Math.fround(v)));
    expect(unpackInt32(Buffer.alloc(0))).toEqual([]);
  });

  it('unpacks a blob at any offset of its buffer, aligned or not', () => {
    for (const offset of [0, 1, 2, 3, 4, 5]) {
      expect(unpackInt32(sliceAt(littleEndian(IDS, 'int32'), offset))).toEqual(IDS);
      expect(unpackFloat32(sliceAt(littleEndian(LOGPROBS, 'float32'), offset))).toEqual(LOGPROBS.map((v) => Math.fround(v)));
    }
  });

  it('returns plain arrays that do not share the blob bytes', () => {
    const blob = packInt32([7, 8]);
    const values = unpackInt32(blob);
    blob.fill(0);
    expect(Array.isArray(values)).toBe(true);
    expect(values).toEqual([7, 8]);
  });
});
