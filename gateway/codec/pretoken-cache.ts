import { PieceCache } from './piece-cache.js';
import { PretokenSplitter } from './pretoken-split.js';
import type { TextTokenizer } from './tokenizer.js';

export interface PretokenCacheOptions {
  /** Most pre-tokens (words, number digits, whitespace runs) whose ids are kept. Default 65536 (~4 MB of heap). */
  maxEntries?: number;
  /** Pre-tokens longer than this many UTF-16 units are encoded every time, never kept. Default 64. */
  maxPieceLength?: number;
}

/** Texts joined by the separator token did not come back as as many id runs (a defect). */
export class PretokenCacheError extends Error {
  override name = 'PretokenCacheError';
}

/** A text's parts once looked up: ids known, or the index of a text in the call's one batch. */
type Resolved = readonly number[] | number;

/**
 * The tokenizer with an exact cache of pre-token ids in front of it, as tiktoken and Hugging
 * Face's BPE keep: BPE runs per pre-token, so a text's ids are its added tokens' ids and its
 * pre-tokens' ids in order. The split runs in JS; only the pre-tokens not cached (and segments
 * the JS split does not cover, see PretokenSplitter) go to the inner tokenizer, in one call (joined
 * by an added token, which splits as hard as separate calls), and when all are cached no native
 * call is made. Returns `inner` unchanged when the tokenizer.json is not a shape the split was
 * verified for.
 */
export function withPretokenCache(inner: TextTokenizer, tokenizerJson: object, options: PretokenCacheOptions = {}): TextTokenizer {
  const verified = PretokenSplitter.of(tokenizerJson);
  if (!verified) return inner;
  const splitter: PretokenSplitter = verified;
  const cache = new PieceCache(options.maxEntries ?? 65_536);
  const maxPieceLength = options.maxPieceLength ?? 64;

  /** The ids of each text (none holds an added token) from one call: joined by the separator. */
  async function encodeSeparated(texts: string[]): Promise<number[][]> {
    const { id: separator, content } = splitter.separator;
    const out: number[][] = [[]];
    for (const id of await inner.encode(texts.join(content))) {
      if (id === separator) out.push([]);
      else out[out.length - 1]!.push(id);
    }
    if (out.length !== texts.length) {
      throw new PretokenCacheError(`${texts.length} texts joined by ${content} encoded as ${out.length}`);
    }
    return out;
  }

  async function encodeBatch(texts: string[]): Promise<number[][]> {
    const batch: string[] = [];
    const index = new Map<string, number>();
    /** Batch positions holding a pre-token (the only ids the cache may keep). */
    const pieces = new Set<number>();
    const pending = (text: string): number => {
      let at = index.get(text);
      if (at === undefined) {
        at = batch.push(text) - 1;
        index.set(text, at);
      }
      return at;
    };
    /** The text's parts, or undefined when a pre-token splits differently alone than in context. */
    const plan = (text: string): Resolved[] | undefined => {
      const out: Resolved[] = [];
      for (const part of splitter.split(text)) {
        if ('added' in part) out.push([part.added]);
        else if ('segment' in part) out.push(pending(part.segment));
        else {
          for (const piece of part.pieces) {
            const ids = piece.length <= maxPieceLength ? cache.get(piece) : undefined;
            if (ids !== undefined) out.push(ids);
            else if (!PretokenSplitter.isWhole(piece)) return undefined;
            else {
              const at = pending(piece);
              pieces.add(at);
              out.push(at);
            }
          }
        }
      }
      return out;
    };
    const plans = texts.map(plan);
    // A text whose pre-token does not stand alone is encoded whole, beside the batch.
    const [encoded, ...wholes] = await Promise.all([
      batch.length > 0 ? encodeSeparated(batch) : [],
      ...texts.map((text, t) => (plans[t] ? undefined : inner.encode(text))),
    ]);
    for (const at of pieces) {
      const piece = batch[at]!;
      // A copy: the piece is a slice that would keep the whole text alive (pieces are ASCII).
      if (piece.length <= maxPieceLength) cache.set(Buffer.from(piece, 'latin1').toString('latin1'), encoded![at]!);
    }
    return plans.map((parts, t) => {
      if (!parts) return wholes[t]!;
      const ids: number[] = [];
      for (const r of parts) for (const id of typeof r === 'number' ? encoded![r]! : r) ids.push(id);
      return ids;
    });
  }

  return {
    kind: inner.kind,
    pretokenCache: true,
    encode: async (text) => (await encodeBatch([text]))[0]!,
    encodeBatch,
    decode: (ids) => inner.decode(ids),
    tokenId: (text) => inner.tokenId(text),
  };
}
