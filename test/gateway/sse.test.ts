import { describe, expect, it } from 'vitest';
import { readSseBatches, readSseData } from '../../gateway/backends/sse.js';

/** A deterministic generator, so a failure reproduces. */
function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0);
}

/** The reader as it was before it read chunks a batch at a time: the oracle for what it yields. */
function referenceData(text: string): string[] {
  const out: string[] = [];
  let buffer = text;
  let end: number;
  while ((end = buffer.indexOf('\n\n')) >= 0) {
    const event = buffer.slice(0, end);
    buffer = buffer.slice(end + 2);
    const data = event
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).trimStart())
      .join('\n');
    if (data) out.push(data);
  }
  return out;
}

async function* chunksOf(bytes: Uint8Array, cuts: number[]): AsyncGenerator<Uint8Array> {
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    yield bytes.subarray(from, cut);
    from = cut;
  }
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

const STREAM = [
  'data: {"choices":[{"text":"a"}]}\n\n',
  'data:{"no":"space"}\n\n',
  'data:   three spaces\n\n',
  ': a comment\ndata: after a comment\n\n',
  'event: message\nid: 7\ndata: line one\ndata: line two\n\n',
  'data: ünïcode ✓ 漢字 🙂\n\n',
  'data:\n\n',
  'id: 8\n\n',
  'data: [DONE]\n\n',
  'data: unterminated',
].join('');

describe('readSseData', () => {
  it('yields what the per-event reader yields, however the stream is cut into chunks', async () => {
    const bytes = new TextEncoder().encode(STREAM);
    const expected = referenceData(STREAM);
    expect(expected).toContain('line one\nline two');
    expect(expected).toContain('ünïcode ✓ 漢字 🙂');
    const next = lcg(3);
    // Every single cut (an event, a `\n\n` or a multi-byte character split in two), then random cuttings.
    const cuttings = Array.from({ length: bytes.length - 1 }, (_, i) => [i + 1]);
    for (let round = 0; round < 50; round++) {
      const cuts = Array.from({ length: 1 + (next() % 20) }, () => 1 + (next() % (bytes.length - 1)));
      cuttings.push([...new Set(cuts)].sort((a, b) => a - b));
    }
    for (const cuts of cuttings) expect(await collect(readSseData(chunksOf(bytes, cuts)))).toEqual(expected);
  });

  it('reads a fetch body as well as a node stream', async () => {
    const body = new Response(STREAM).body!;
    expect(await collect(readSseData(body))).toEqual(referenceData(STREAM));
  });
});

describe('readSseBatches', () => {
  it('yields all the events a chunk completes together, and nothing for a chunk that completes none', async () => {
    const text = 'data: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4';
    const bytes = new TextEncoder().encode(text);
    // Chunks: two events and half of the third's blank line, the other half, the unterminated fourth.
    const batches = await collect(readSseBatches(chunksOf(bytes, [text.indexOf('data: 4') - 1, text.indexOf('data: 4')])));
    expect(batches).toEqual([['1', '2'], ['3']]);
    const closed = await collect(readSseBatches(chunksOf(new TextEncoder().encode(`${text}\n\n`), [3, 4])));
    expect(closed).toEqual([['1', '2', '3', '4']]);
  });
});
