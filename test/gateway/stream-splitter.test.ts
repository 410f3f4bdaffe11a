import { beforeAll, describe, expect, it } from 'vitest';
import { IncrementalDecoder } from '../../gateway/codec/incremental-decode.js';
import { StreamSplitter } from '../../gateway/codec/stream-splitter.js';
import type { Codec } from '../../gateway/codec/index.js';
import { testCodec } from '../helpers/stack.js';

let codec: Codec;
beforeAll(async () => {
  codec = await testCodec();
});

/** Feeds a turn token by token and collects what would be streamed. */
async function stream(text: string, startsInReasoning = false) {
  const splitter = new StreamSplitter(codec.tokenizer, codec.encoder.endOfTurnId, { startsInReasoning });
  let reasoning = '';
  let content = '';
  for (const id of [...(await codec.tokenizer.encode(text)), codec.encoder.endOfTurnId]) {
    const d = splitter.push([id]);
    reasoning += d.reasoning;
    content += d.content;
  }
  return { reasoning, content };
}

describe('streaming a turn as reasoning and content deltas', () => {
  it('streams reasoning, then content, and holds tool calls back', async () => {
    const out = await stream('<think>\nweigh options\n</think>\n\nChecking. ✓\n<tool_call>\n{"name": "shell", "arguments": {}}\n</tool_call>');
    expect(out.reasoning.trim()).toBe('weigh options');
    expect(out.content.trim()).toBe('Checking. ✓');
  });

  it('treats the turn as reasoning when the generation prompt opened <think>', async () => {
    const out = await stream('already thinking\n</think>\n\nanswer', true);
    expect(out.reasoning.trim()).toBe('already thinking');
    expect(out.content).toBe('answer');
  });

  it('streams call text as content when the reply presents no calls (no tools, or tool_choice none)', async () => {
    const text = 'Checking.\n<tool_call>\n{"name": "shell", "arguments": {}}\n</tool_call>';
    const ids = await codec.tokenizer.encode(text);
    const held = new StreamSplitter(codec.tokenizer, codec.encoder.endOfTurnId);
    const open = new StreamSplitter(codec.tokenizer, codec.encoder.endOfTurnId, { callsAsContent: true });
    let heldContent = '';
    let openContent = '';
    for (const id of ids) {
      heldContent += held.push([id]).content;
      openContent += open.push([id]).content;
    }
    expect(heldContent).toBe('Checking.\n');
    expect(openContent).toBe(text);
  });

  it('streams a plain answer as content', async () => {
    expect(await stream('just text')).toEqual({ reasoning: '', content: 'just text' });
  });
});

/** Length of the longest suffix of `text` that is a proper prefix of `tag`. */
function partialTag(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) if (text.endsWith(tag.slice(0, n))) return n;
  return 0;
}

/**
 * The parts of a whole turn's text, as a splitter that saw it at once streams them in total:
 * reasoning inside a leading `<think>`, content after it up to the first `<tool_call>`, each
 * without its leading line breaks, and a tag the text may still be opening held back.
 */
function wholeParts(text: string): { reasoning: string; content: string } {
  const start = text.trimStart();
  if (start.length < '<think>'.length && '<think>'.startsWith(start)) return { reasoning: '', content: '' };
  let reasoning = '';
  let rest = text;
  if (start.startsWith('<think>')) {
    const after = start.slice('<think>'.length);
    const close = after.indexOf('</think>');
    reasoning = close < 0 ? after.slice(0, after.length - partialTag(after, '</think>')) : after.slice(0, close);
    rest = close < 0 ? '' : after.slice(close + '</think>'.length);
  }
  const content = rest.replace(/^\n+/, '');
  const call = content.indexOf('<tool_call>');
  return {
    reasoning: reasoning.replace(/^\n+/, ''),
    content: call < 0 ? content.slice(0, content.length - partialTag(content, '<tool_call>')) : content.slice(0, call),
  };
}

/** A deterministic generator of chunk sizes (xorshift). */
function chunkSizes(seed: number): () => number {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return 1 + ((x >>> 0) % 5);
  };
}

const TURNS = [
  '<think>\n检查选项：α, β — 和 emoji 🧪🔬 分在几个 token 里\n</think>\n\nDone: 数据 ✓ 👍🏽\n<tool_call>\n{"name": "shell"}\n</tool_call>',
  '\n\n  <think>partial tags < </thin </think>tool < <tool_ <tool_call',
  'plain 日本語のテキスト with <tool_ and </think> inside, ending in 🎉',
  '<thi',
  '\n\n\n',
  '<think>\n\n\nonly reasoning 😀😀😀',
  'Ünïcödé ½ ∑ 𝔘𝔫𝔦 \n\n\nlast <tool_call>{}</tool_call> ignored after',
];

describe('the splitter against the whole text', () => {
  it.each(TURNS.map((t, i) => [i, t] as const))('streams turn %i, in any chunking, exactly the parts of its whole text', async (_i, text) => {
    const ids = await codec.tokenizer.encode(text);
    const expected = wholeParts(codec.tokenizer.decode(ids));
    for (let seed = 1; seed <= 20; seed++) {
      const size = chunkSizes(seed * 7919);
      const splitter = new StreamSplitter(codec.tokenizer, codec.encoder.endOfTurnId);
      let reasoning = '';
      let content = '';
      for (let at = 0; at < ids.length; ) {
        const chunk = ids.slice(at, (at += size()));
        const d = splitter.push(chunk);
        reasoning += d.reasoning;
        content += d.content;
        // Nothing streamed is ever taken back: what went out so far begins the whole parts.
        expect(expected.reasoning.startsWith(reasoning) && expected.content.startsWith(content)).toBe(true);
      }
      expect({ reasoning, content }).toEqual(expected);
    }
  });

  it('decodes each id a bounded number of times, however long the answer', async () => {
    const ids = await codec.tokenizer.encode('A long answer, 数据 and 🧪 included. '.repeat(400));
    let decoded = 0;
    const counting = { decode: (list: Iterable<number>) => codec.tokenizer.decode(Array.from(list, (id) => (decoded++, id))) };
    const splitter = new StreamSplitter(counting, codec.encoder.endOfTurnId);
    let content = '';
    for (const id of ids) content += splitter.push([id]).content;
    expect(content).toBe(codec.tokenizer.decode(ids));
    expect(ids.length).toBeGreaterThan(4000);
    // Decoding the whole answer at each token would be ids² / 2, over 8 million here.
    expect(decoded).toBeLessThan(4 * ids.length);
  });
});

describe('IncrementalDecoder', () => {
  /** Ids of a character the tokenizer splits over tokens (its first token alone is an incomplete sequence). */
  async function splitCharacter(): Promise<number[]> {
    for (const c of ['🫠', '𝔘', '𓀀', '🜁', '龘']) {
      const ids = await codec.tokenizer.encode(c);
      if (ids.length > 1) return ids;
    }
    throw new Error('no candidate character spans two tokens');
  }

  it('gives out a character split over tokens once its last byte arrives', async () => {
    const ids = await splitCharacter();
    const decoder = new IncrementalDecoder(codec.tokenizer);
    const out = ids.map((id) => decoder.push([id]));
    expect(out.slice(0, -1).join('')).toBe('');
    expect(out.at(-1)).toBe(codec.tokenizer.decode(ids));
  });

  it('gives out invalid bytes as U+FFFD once they run past what a character can span', async () => {
    // A character's first token, over and over: each starts a sequence the next one breaks.
    const [lead] = await splitCharacter();
    const run = Array<number>(40).fill(lead!);
    const decoder = new IncrementalDecoder(codec.tokenizer);
    let out = '';
    for (const id of run) out += decoder.push([id]);
    expect(out).toMatch(/^\uFFFD+$/);
    const ok = await codec.tokenizer.encode('ok');
    expect(out + decoder.push(ok)).toBe(codec.tokenizer.decode([...run, ...ok]));
  });
});
