import { z } from 'zod';

/**
 * The parts of a tokenizer.json that the pre-token cache reproduces in JS: the added tokens,
 * the normalizer, the pre-tokenizer and the BPE flags, accepted only in the shapes verified
 * against the native tokenizer (Qwen2, Qwen2.5 and Qwen3). Any other shape is not parsed.
 */
const AddedToken = z.object({
  id: z.number().int().nonnegative(),
  content: z.string().min(1),
  single_word: z.literal(false),
  lstrip: z.literal(false),
  rstrip: z.literal(false),
  normalized: z.literal(false),
});

/** The Qwen2/2.5/3 split pattern, the only one translated below. */
const QWEN_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const ByteLevel = z.object({
  type: z.literal('ByteLevel'),
  add_prefix_space: z.literal(false),
  use_regex: z.literal(false),
});

const VerifiedTokenizerJson = z.object({
  added_tokens: z.array(AddedToken),
  normalizer: z.object({ type: z.literal('NFC') }).strict(),
  pre_tokenizer: z.object({
    type: z.literal('Sequence'),
    pretokenizers: z.tuple([
      z.object({
        type: z.literal('Split'),
        pattern: z.object({ Regex: z.literal(QWEN_PATTERN) }).strict(),
        behavior: z.literal('Isolated'),
        invert: z.literal(false),
      }),
      ByteLevel,
    ]),
  }),
  model: z.object({
    type: z.literal('BPE'),
    vocab: z.record(z.string(), z.number()),
    dropout: z.null(),
    byte_fallback: z.literal(false),
    ignore_merges: z.literal(false),
    fuse_unk: z.literal(false),
    continuing_subword_prefix: z.union([z.null(), z.literal('')]),
    end_of_word_suffix: z.union([z.null(), z.literal('')]),
  }),
});

/**
 * QWEN_PATTERN as it reads on ASCII text, the only text it runs on: the inline `(?i:)`, which JS
 * lacks, is both ASCII cases (U+017F and U+212A, which fold onto s and k, never reach it), and
 * JS `\s` is Unicode White_Space there (elsewhere they differ: U+FEFF, U+0085).
 */
const QWEN_REGEX = /'(?:[sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;

/** Only ASCII text takes the JS path: there the pattern and NFC are exactly Rust's. */
const ASCII = /^[\x00-\x7f]*$/;

/**
 * Where a segment may be cut without changing its ids: after a line break followed by ASCII
 * spaces or tabs and a printable ASCII character. No match of the pattern spans that point (the
 * match taking a run's last line break ends after it), and NFC composes nothing across it.
 */
const LINE_CUT = /[\r\n](?=[ \t]*[\x21-\x7e])/g;

/** One piece of a text: an added token's id, or text that the tokenizer encodes on its own. */
export type Part = { added: number } | { pieces: string[] } | { segment: string };

/**
 * Splits text as the tokenizer does before BPE: on added tokens (leftmost, longest first), then
 * into its pre-tokens, except lines with non-ASCII characters, which are left whole.
 */
export class PretokenSplitter {
  private readonly addedIds: Map<string, number>;
  private readonly added: RegExp | undefined;

  /**
   * @param separator an added token that BPE never yields (its id is not in the vocabulary):
   *   texts joined with it encode as each text alone, and its id tells where each one ends.
   */
  private constructor(
    addedTokens: { id: number; content: string }[],
    readonly separator: { id: number; content: string },
  ) {
    this.addedIds = new Map(addedTokens.map((t) => [t.content, t.id]));
    const alternatives = [...this.addedIds.keys()]
      .sort((a, b) => b.length - a.length)
      .map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    this.added = alternatives.length > 0 ? new RegExp(alternatives.join('|'), 'g') : undefined;
  }

  /** The splitter of a tokenizer.json, or undefined when its shape is not a verified one. */
  static of(tokenizerJson: object): PretokenSplitter | undefined {
    const parsed = VerifiedTokenizerJson.safeParse(tokenizerJson);
    if (!parsed.success) return undefined;
    const vocabIds = new Set(Object.values(parsed.data.model.vocab));
    const separator = parsed.data.added_tokens.find((t) => !vocabIds.has(t.id));
    return separator ? new PretokenSplitter(parsed.data.added_tokens, separator) : undefined;
  }

  split(text: string): Part[] {
    const parts: Part[] = [];
    let from = 0;
    if (this.added) {
      this.added.lastIndex = 0;
      for (let m = this.added.exec(text); m; m = this.added.exec(text)) {
        if (m.index > from) segment(text.slice(from, m.index), parts);
        parts.push({ added: this.addedIds.get(m[0])! });
        from = m.index + m[0].length;
      }
    }
    if (from < text.length) segment(from === 0 ? text : text.slice(from), parts);
    return parts;
  }

  /** Whether the piece, alone, pre-tokenizes to itself (so its own encoding is its BPE). */
  static isWhole(piece: string): boolean {
    QWEN_REGEX.lastIndex = 0;
    const m = QWEN_REGEX.exec(piece);
    return m !== null && m.index === 0 && m[0].length === piece.length;
  }
}

/** A segment between added tokens: ASCII runs of lines as pre-tokens, other lines whole. */
function segment(text: string, parts: Part[]): void {
  if (ASCII.test(text)) {
    parts.push(asciiPart(text));
    return;
  }
  let ascii = 0;
  let from = 0;
  const line = (to: number) => {
    const piece = text.slice(from, to);
    if (!ASCII.test(piece)) {
      if (from > ascii) parts.push(asciiPart(text.slice(ascii, from)));
      parts.push({ segment: piece });
      ascii = to;
    }
    from = to;
  };
  LINE_CUT.lastIndex = 0;
  for (let m = LINE_CUT.exec(text); m; m = LINE_CUT.exec(text)) line(m.index + 1);
  line(text.length);
  if (text.length > ascii) parts.push(asciiPart(text.slice(ascii)));
}

function asciiPart(text: string): Part {
  const pieces = text.match(QWEN_REGEX) ?? [];
  // Every character starts a match, so the pieces cover the text; checked, as it is cheap.
  let length = 0;
  for (const piece of pieces) length += piece.length;
  return length === text.length ? { pieces } : { segment: text };
}
