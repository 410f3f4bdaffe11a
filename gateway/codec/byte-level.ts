import { z } from 'zod';
import type { ModelFiles } from './model-files.js';

/**
 * GPT-2's byte ⇄ character table of byte-level BPE: printable bytes map to themselves, the others
 * to code points from U+0100 on, in byte order.
 */
function byteLevelAlphabet(): Int16Array {
  const printable = (b: number): boolean => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
  // Indexed by UTF-16 unit: the byte it stands for, or -1.
  const table = new Int16Array(0x200).fill(-1);
  let next = 0x100;
  for (let b = 0; b < 256; b++) table[printable(b) ? b : next++] = b;
  return table;
}

const TokenizerJsonShape = z.object({
  decoder: z.object({ type: z.literal('ByteLevel') }).passthrough(),
  model: z
    .object({
      type: z.literal('BPE'),
      // Checked entry by entry below: a zod record of 150k entries costs half a second.
      vocab: z.custom<Record<string, unknown>>((v) => typeof v === 'object' && v !== null && !Array.isArray(v)),
      end_of_word_suffix: z.string().nullish(),
    })
    .passthrough(),
  added_tokens: z.array(z.object({ id: z.number().int().min(0), content: z.string() }).passthrough()),
});

/**
 * Synchronous decode and special-token lookup straight from a byte-level BPE vocabulary, exactly as
 * the pure-JS tokenizer decodes (runs of vocabulary tokens as UTF-8 with U+FFFD for invalid
 * sequences, added tokens as written, unknown ids dropped) without building it: about 2 MB
 * instead of the pure-JS tokenizer's ~45 MB of heap next to the native one.
 */
export class ByteLevelDecoder {
  private readonly utf8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
  private scratch = new Uint8Array(1 << 12);

  private constructor(
    /** Bytes of every vocabulary token, concatenated in id order. */
    private readonly bytes: Uint8Array,
    /** Token `id` is `bytes[offsets[id]..offsets[id + 1]]`. */
    private readonly offsets: Uint32Array,
    private readonly addedById: Map<number, string>,
  ) {}

  /**
   * The decoder of a model directory, or undefined when its tokenizer is not plain byte-level BPE
   * decoded without clean-up (then only the pure-JS tokenizer decodes it as the gateway expects).
   */
  static of(files: ModelFiles): ByteLevelDecoder | undefined {
    const parsed = TokenizerJsonShape.safeParse(files.tokenizerJson);
    if (!parsed.success || parsed.data.model.end_of_word_suffix) return undefined;
    if (files.tokenizerConfig.clean_up_tokenization_spaces !== false) return undefined;
    const alphabet = byteLevelAlphabet();
    const addedById = new Map(parsed.data.added_tokens.map((t) => [t.id, t.content]));
    const added = new Set(addedById.values());
    const byId: string[] = [];
    for (const [token, id] of Object.entries(parsed.data.model.vocab)) {
      if (typeof id !== 'number' || !Number.isInteger(id) || id < 0) return undefined;
      // The pure-JS decoder treats a vocabulary token spelled like an added token as that token.
      if (added.has(token) || addedById.has(id) || byId[id] !== undefined) return undefined;
      byId[id] = token;
    }
    const offsets = new Uint32Array(byId.length + 1);
    // Byte-level tokens are one byte per UTF-16 unit (the alphabet ends at U+0143).
    const bytes = new Uint8Array(byId.reduce((sum, t) => sum + t.length, 0));
    let at = 0;
    for (let id = 0; id < byId.length; id++) {
      const token = byId[id] ?? '';
      for (let i = 0; i < token.length; i++) {
        const b = alphabet[token.charCodeAt(i)] ?? -1;
        if (b < 0) return undefined;
        bytes[at++] = b;
      }
      offsets[id + 1] = at;
    }
    return new ByteLevelDecoder(bytes, offsets, addedById);
  }

  decode(ids: Iterable<number>): string {
    let out = '';
    let used = 0;
    for (const id of ids) {
      const added = this.addedById.get(id);
      if (added !== undefined) {
        if (used > 0) out += this.utf8.decode(this.scratch.subarray(0, used));
        used = 0;
        out += added;
        continue;
      }
      if (!(id >= 0 && id + 1 < this.offsets.length)) continue;
      const from = this.offsets[id]!;
      const to = this.offsets[id + 1]!;
      if (used + to - from > this.scratch.length) this.grow(used + to - from);
      this.scratch.set(this.bytes.subarray(from, to), used);
      used += to - from;
    }
    if (used > 0) out += this.utf8.decode(this.scratch.subarray(0, used));
    return out;
  }

  /** An added token (`<|im_end|>`, `<think>`) or a whole vocabulary token; throws otherwise. */
  tokenId(text: string): number {
    for (const [id, content] of this.addedById) if (content === text) return id;
    // Rare (a protocol's few special tokens, once each): a scan instead of a 150k-entry map.
    const want = new TextEncoder().encode(text);
    for (let id = 0; id + 1 < this.offsets.length; id++) {
      const from = this.offsets[id]!;
      if (this.offsets[id + 1]! - from !== want.length || want.length === 0) continue;
      if (want.every((b, i) => this.bytes[from + i] === b)) return id;
    }
    throw new Error(`${JSON.stringify(text)} is not a single token`);
  }

  private grow(needed: number): void {
    const next = new Uint8Array(Math.max(needed, this.scratch.length * 2));
    next.set(this.scratch);
    this.scratch = next;
  }
}
