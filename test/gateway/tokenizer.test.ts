import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ByteLevelDecoder } from '../../gateway/codec/byte-level.js';
import { createChatTemplate } from '../../gateway/codec/chat-template.js';
import { JsTokenizer } from '../../gateway/codec/js-tokenizer.js';
import type { ChatMessage, ToolSpec } from '../../gateway/codec/messages.js';
import { defaultModelDir, loadModelFiles, type ModelFiles } from '../../gateway/codec/model-files.js';
import { loadNativeTokenizer } from '../../gateway/codec/native-tokenizer.js';
import { withPretokenCache } from '../../gateway/codec/pretoken-cache.js';
import { loadCodec } from '../../gateway/codec/index.js';
import { createTokenizer, type TextTokenizer } from '../../gateway/codec/tokenizer.js';
import { createRng } from '../../engine-sim/prng.js';

const REPO = path.resolve(import.meta.dirname, '../..');
const SHARED = path.resolve(REPO, '../shared');
const TEXT_FILE = /\.(ts|js|mjs|py|md|json|ya?ml|sh)$/;

let files: ModelFiles;
let js: JsTokenizer;
let native: TextTokenizer;
let byteLevel: ByteLevelDecoder;

beforeAll(async () => {
  files = await loadModelFiles(defaultModelDir());
  js = new JsTokenizer(files);
  // Loaded directly, not through createTokenizer: a platform without the binary fails here
  // instead of silently comparing the pure-JS tokenizer with itself.
  native = await loadNativeTokenizer(files);
  const decoder = ByteLevelDecoder.of(files);
  if (!decoder) throw new Error('the Qwen3 tokenizer should be decoded from its byte-level vocabulary');
  byteLevel = decoder;
});


function repoTexts(): [string, string][] {
  const tracked = execFileSync('git', ['ls-files'], { cwd: REPO, encoding: 'utf8' }).split('\n');
  const shared = readdirSync(SHARED, { recursive: true, encoding: 'utf8' })
    .map((f) => path.join(SHARED, f))
    .filter((f) => f.endsWith('.md') && statSync(f).isFile());
  return [...tracked.filter((f) => TEXT_FILE.test(f)).map((f) => path.join(REPO, f)), ...shared].map((f) => [
    path.relative(REPO, f),
    readFileSync(f, 'utf8'),
  ]);
}

const TOOLS: ToolSpec[] = [
  {
    type: 'function',
    function: {
      name: 'shell',
      description: 'Run a shell command in the repository — returns stdout/stderr.',
      parameters: { type: 'object', properties: { command: { type: 'string' }, timeout: { type: 'integer' } }, required: ['command'] },
    },
  },
  {
    type: 'function',
    function: {
      name: 'write_file',
      description: 'Write a file (UTF-8).',
      parameters: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } } },
    },
  },
];

function conversations(sources: string[]): [string, string][] {
  const template = createChatTemplate(files, { enableThinking: true });
  const noThinking = createChatTemplate(files, { enableThinking: false });
  const out: [string, string][] = [];
  for (let i = 0; i < sources.length; i += 3) {
    const [a = '', b = '', c = ''] = sources.slice(i, i + 3).map((s) => s.slice(0, 6000));
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You are a coding agent. 你是一个编程助手。 <|im_start|> is special.' },
      { role: 'user', content: `Fix this:\n${a}` },
      {
        role: 'assistant',
        content: '',
        reasoning_content: `Let me look.\n\n${b.slice(0, 800)}`,
        tool_calls: [
          { name: 'shell', arguments: { command: `grep -rn "x" src\t# ${i}`, timeout: 30 } },
          { name: 'write_file', arguments: { path: 'a.py', content: c.slice(0, 500) } },
        ],
      },
      { role: 'tool', content: b },
      { role: 'tool', content: c },
      { role: 'assistant', content: 'Done: <tool_call> shown literally, then </think>.', reasoning_content: 'It works ✓.' },
      { role: 'user', content: 'Now again, with CRLF:\r\n\r\nok?' },
    ];
    out.push([`conversation ${i}`, template.render(messages, { tools: TOOLS, addGenerationPrompt: true })]);
    // Ending on the model's turn keeps the reasoning the template drops once a new user turn comes.
    out.push([`conversation ${i} with reasoning`, template.render(messages.slice(0, 6), { tools: TOOLS, addGenerationPrompt: false })]);
    out.push([`conversation ${i} no thinking`, noThinking.render(messages.slice(0, 2), { addGenerationPrompt: true })]);
  }
  return out;
}

const UNICODE: [string, string][] = [
  ['CJK', '汉字漢字かなカナ한국어 中文标点：“引号”、《书名》……全角ＡＢＣ１２３　空格'],
  ['Arabic', 'مرحبا بالعالم، هذا نص عربي مع أرقام ١٢٣٤٥ وتشكيل: مُحَمَّدٌ'],
  ['Hindi', 'नमस्ते दुनिया — हिन्दी में क्षत्रिय, ज्ञान, श्री ०१२३'],
  ['Thai and Hebrew', 'สวัสดีครับ שלום עולם עִבְרִית'],
  ['emoji', '👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🧑🏿‍💻 ❤️‍🔥 🇯🇵🇺🇸 1️⃣ #️⃣ 🫠🫶🏻'],
  ['combining', 'e\u0301 a\u0308 o\u0302\u0323 Z\u0351\u0307\u0353\u0344 q\u0303\u0304\u0305 \u0301leading'],
  ['NFC and NFD', ['Café', 'Ångström', 'Ελληνικά', '한글', 'ﬁ ﬂ ẞ'].flatMap((s) => [s.normalize('NFC'), s.normalize('NFD'), s.normalize('NFKD')]).join(' | ')],
  ['full-width', 'ＦＵＬＬ－ＷＩＤＴＨ：（ｘ＋ｙ）＝１０！？＠＃＄％＾＆＊'],
  ['whitespace', ' \t\t  x  \n\n\n   \r\n\r\n\t \u00a0\u2003\u3000 y \u200b\u200d\ufeff z   \n \n\t\n   '],
  ['digits', `${'1234567890'.repeat(30)} 3.14159265358979 -0.000001e-12 0x7fffffff 1,000,000 ١٢٣ ${'9'.repeat(257)}`],
  ['specials inline', '<|im_start|>user\nhi<|im_end|>\n<|endoftext|><think>\n</think><tool_call>{"a":1}</tool_call><|im_start|><|im_end|>'],
  ['control characters', '\u0000\u0001\u0007\u001b[31mred\u001b[0m\u007f\u0085\u2028\u2029'],
  ['contractions', "I'm, you're, they've, she'll, he'd, it's, DON'T, We'Re, ''s 't"],
];

function randomStrings(): [string, string][] {
  const next = createRng(14);
  const int = (n: number) => Math.floor(next() * n);
  const ranges: [number, number][] = [
    [0x20, 0x7f], [0x00, 0x20], [0xa0, 0x250], [0x300, 0x370], [0x370, 0x530], [0x590, 0x700],
    [0x900, 0x980], [0xe00, 0xe80], [0x3040, 0x3100], [0x4e00, 0x9fff], [0xac00, 0xd7a4],
    [0xff00, 0xfff0], [0x1f300, 0x1fa00], [0x20000, 0x2a6df], [0x10000, 0x10ffff],
  ];
  const out: [string, string][] = [];
  for (let n = 0; n < 300; n++) {
    let s = '';
    const length = 1 + int(n % 10 === 0 ? 4000 : 200);
    for (let i = 0; i < length; i++) {
      const roll = next();
      if (roll < 0.3) s += ' \n\t'[int(3)]!;
      else if (roll < 0.32) s += '\ud800\udbff\udc00\udfff'[int(4)]!; // lone surrogates
      else {
        const [lo, hi] = ranges[int(ranges.length)]!;
        s += String.fromCodePoint(lo + int(hi - lo));
      }
    }
    out.push([`random code points ${n}`, s]);
  }
  for (let n = 0; n < 100; n++) {
    const bytes = Buffer.from(Array.from({ length: 1 + int(3000) }, () => int(256)));
    out.push([`random bytes as latin1 ${n}`, bytes.toString('latin1')]);
    out.push([`random bytes as UTF-8 ${n}`, bytes.toString('utf8')]);
  }
  return out;
}

function fullCorpus(): [string, string][] {
  const sources = repoTexts();
  return [...sources, ...conversations(sources.map(([, t]) => t)), ...UNICODE, ...randomStrings()];
}

/** The first position where the two id lists differ, with the text around it, or undefined. */
function firstMismatch(text: string, expected: number[], actual: number[], names = ['pure-JS', 'native']): string | undefined {
  const at = expected.findIndex((id, i) => actual[i] !== id);
  const i = at >= 0 ? at : expected.length === actual.length ? -1 : expected.length;
  if (i < 0) return undefined;
  const context = (ids: number[]) => JSON.stringify(js.decode(ids.slice(Math.max(0, i - 5), i + 5)));
  return `ids differ at token ${i} of ${expected.length}/${actual.length}: ${names[0]} ${JSON.stringify(expected.slice(i, i + 5))} ${context(expected)}, ${names[1]} ${JSON.stringify(actual.slice(i, i + 5))} ${context(actual)} (text ${JSON.stringify(text.slice(0, 80))}…)`;
}

describe('the native tokenizer against the pure-JS one', () => {
  it('gives identical ids on the repository, the shared docs, rendered conversations, Unicode and random text', async () => {
    const corpus = fullCorpus();
    const chars = corpus.reduce((sum, [, t]) => sum + t.length, 0);
    expect(chars).toBeGreaterThan(3_000_000);
    // The rendered conversations carry the template's tool header, tool calls and reasoning.
    const rendered = corpus.filter(([name]) => name.startsWith('conversation')).map(([, t]) => t).join('');
    for (const part of ['<tools>', '<tool_call>\n{"name": "shell", "arguments": {"command": "grep', '<think>\nIt works', '<tool_response>']) {
      expect(rendered).toContain(part);
    }
    let tokens = 0;
    let roundTrips = 0;
    for (const [name, text] of corpus) {
      const expected = js.encode(text);
      const actual = await native.encode(text);
      const mismatch = firstMismatch(text, expected, actual);
      if (mismatch) expect.fail(`${name}: ${mismatch}`);
      tokens += actual.length;
      if (actual.length === 0) continue;
      const decoded = js.decode(expected);
      expect(native.decode(actual), name).toBe(decoded);
      if (decoded === text) roundTrips++;
    }
    // Most texts are already NFC and well-formed, so the pure-JS tokenizer gives them back whole.
    expect(roundTrips).toBeGreaterThan(corpus.length / 2);
    expect(tokens).toBeGreaterThan(900_000);
  }, 180_000);

  it('decodes any id sequence as the pure-JS tokenizer does, partial characters and added tokens included', () => {
    const next = createRng(7);
    const added = (files.tokenizerJson as { added_tokens: { id: number }[] }).added_tokens.map((t) => t.id);
    for (let n = 0; n < 2000; n++) {
      const ids = Array.from({ length: 1 + Math.floor(next() * 40) }, () =>
        next() < 0.1 ? added[Math.floor(next() * added.length)]! : Math.floor(next() * 151_643),
      );
      expect(byteLevel.decode(ids), JSON.stringify(ids)).toBe(js.decode(ids));
    }
    // Every single vocabulary token, including the byte tokens that are not valid UTF-8 alone.
    const all = Array.from({ length: 151_643 }, (_, id) => id);
    for (let from = 0; from < all.length; from += 997) {
      const slice = all.slice(from, from + 997);
      expect(slice.map((id) => byteLevel.decode([id]))).toEqual(slice.map((id) => js.decode([id])));
    }
  });

  it('finds the same ids for added tokens and whole vocabulary tokens', () => {
    const added = (files.tokenizerJson as { added_tokens: { content: string }[] }).added_tokens.map((t) => t.content);
    for (const text of [...added, 'hello', ' world', '\n\n', '{"', '你好']) {
      expect(native.tokenId(text), text).toBe(js.tokenId(text));
    }
    expect(() => native.tokenId('hello world, not one token')).toThrow(/not a single token/);
  });

  it('returns each caller its own ids when many encodes run at once', async () => {
    const next = createRng(3);
    const texts = Array.from({ length: 200 }, (_, i) => {
      const words = Array.from({ length: 5 + Math.floor(next() * 400) }, () => Math.floor(next() * 1e6).toString(36));
      return `request ${i}: ${words.join(i % 2 ? ' ' : '\n')}`;
    });
    const results = await Promise.all(texts.map((t) => native.encode(t)));
    results.forEach((ids, i) => expect(ids, texts[i]!.slice(0, 20)).toEqual(js.encode(texts[i]!)));
  });
});

/** Texts aimed at the pre-token cache's split: case folding, whitespace classes, NFC, added tokens. */
function adversarial(): [string, string][] {
  const contractions = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d"].flatMap((c) => [c, c.toUpperCase(), c[0] + c[1]!.toUpperCase() + c.slice(2)]);
  const long = 'x'.repeat(70);
  const out: [string, string][] = [
    ['contractions in every case', contractions.map((c) => `it${c} ${c}x ${c}`).join(' ') + "\nWE'Re THEY'lL I'M ''S"],
    ['contractions with case-folding letters', "it'\u017f it'\u017fs IT'\u212a x'\u017ft \u017f'\u017f 's\u0307 'ſ'S"],
    ['U+0085 and U+FEFF', 'a\u0085b \u0085\n c\ufeffd \ufeff\n\ufeff x\u0085\u0085 y\n\u0085z'],
    ['no-break and other spaces', 'a\u00a0b \u00a0\u00a0c\n\u00a0d \u2003e\u3000f\u3000\u3000\ng \u2028h\u2029i \u2028\n\u2029 \u202f\u205f\u1680 j'],
    ['CRLF runs', 'a\r\n\r\nb\r\r\n\n\rc\r\n  \r\n\t\r\nd;\r\n\r\n  e\r'],
    ['whitespace before newlines', 'x   \n  \n\t\n y \t \n\n    z\n   \n    w  \n'],
    ['ASCII vertical tab, form feed, separators', 'a\u000bb\u000c c\u001c\u001d d\u001e\u001f\n\u000b\n e \u000c\n'],
    ['NFD composing across pieces', 'cafe\u0301 e\u0301x 1\u0301 ;\u0301 A\u030a\nn\u0303o \u0301 \n\u0301 \u1100\u1161\u11a8 a\u0323\u0302'],
    ['combining marks after spaces, newlines and digits', ' \u0301a\n\u0301b\t\u0308 9\u0301 12\u0303\u0304 \r\n\u0327c  \u0301\n  \u0301'],
    ['lone surrogates', 'a\ud800b \udc00 c\ud83dd \n\udfff\n x\ud800\ud800 y'],
    ['added tokens adjacent', '<|im_start|><|im_end|>x<|im_end|>\n<|endoftext|>y<think></think><tool_call>z</tool_call>'],
    ['partial added tokens', '<|im_end <|im_start| <think <tool_call </think <|im_end|im_end|> <<|im_end|>> <think>>'],
    ['added tokens in words', "don't<|im_end|>s 's<think>ll x<|im_start|>'re 12<|im_end|>34"],
    ['emoji ZWJ sequences', 'a👨‍👩‍👧‍👦b 🏳️‍🌈\n🧑🏿‍💻 x\n❤️‍🔥'],
    ['long words and runs', `${long} ${'ab1'.repeat(40)} ${' '.repeat(100)}x${'\n'.repeat(80)}y${'\t '.repeat(60)}\n${'-'.repeat(90)}\n${'9'.repeat(100)}`],
    ['indented code with non-ASCII lines', 'def f():\n    return 1  # — note\n    x = "naïve"\n\tpass\n  \n}\n  µs\n'],
    ['apostrophes and punctuation', "x' 'x '' ''' ' s ');\n'\n's'\n\"'ll\" ('d) [ 'm ]"],
  ];
  return out;
}

describe('the pre-token cache', () => {
  it('gives the native ids on the whole corpus, cold and warm', async () => {
    const cached = withPretokenCache(native, files.tokenizerJson);
    expect(cached.pretokenCache).toBe(true);
    const corpus = [...fullCorpus(), ...adversarial()];
    const expected = await native.encodeBatch(corpus.map(([, t]) => t));
    for (const round of ['cold', 'warm']) {
      for (const [i, [name, text]] of corpus.entries()) {
        const mismatch = firstMismatch(text, expected[i]!, await cached.encode(text), ['native', 'cached']);
        if (mismatch) expect.fail(`${round} cache, ${name}: ${mismatch}`);
      }
    }
  }, 120_000);

  it('gives the native ids on adversarial texts with a tiny cache and short pieces', async () => {
    const cached = withPretokenCache(native, files.tokenizerJson, { maxEntries: 16, maxPieceLength: 3 });
    for (const [name, text] of adversarial()) {
      const expected = await native.encode(text);
      for (const round of ['cold', 'warm']) {
        const mismatch = firstMismatch(text, expected, await cached.encode(text), ['native', 'cached']);
        if (mismatch) expect.fail(`${round}, ${name}: ${mismatch}`);
      }
    }
  });

  it('gives the native ids on every string of up to 4 characters from the cases of the split', async () => {
    // Contraction letters in both cases, digits, each kind of ASCII whitespace, punctuation, controls.
    const alphabet = ['a', 'A', 's', 'S', 'l', 'L', 'e', 'E', 'r', 'v', 'm', 'd', 'T', '1', "'", ' ', '\t', '\n', '\r', '\v', '\f', '\x1c', '.', '\x00', '\x7f', '<'];
    const texts: string[] = [''];
    for (let from = 0; texts[from]!.length < 4; from++) for (const c of alphabet) texts.push(texts[from]! + c);
    expect(texts.length).toBe(1 + 26 + 26 ** 2 + 26 ** 3 + 26 ** 4);
    const cached = withPretokenCache(native, files.tokenizerJson, { maxEntries: 1 << 20 });
    const expected = await native.encodeBatch(texts);
    for (const round of ['cold', 'warm']) {
      const actual = await cached.encodeBatch(texts);
      texts.forEach((text, i) => {
        const mismatch = firstMismatch(text, expected[i]!, actual[i]!, ['native', 'cached']);
        if (mismatch) expect.fail(`${round}, ${JSON.stringify(text)}: ${mismatch}`);
      });
    }
  }, 60_000);

  it('asks the inner tokenizer once per call, and not at all when every piece is cached', async () => {
    const calls: string[] = [];
    const counting: TextTokenizer = { ...native, encode: (text) => (calls.push(text), native.encode(text)) };
    const cached = withPretokenCache(counting, files.tokenizerJson);
    const text = 'src/a.py:1: def handler(request, ctx):\n    return ctx.value + 1\n';
    expect(await cached.encode(text)).toEqual(await native.encode(text));
    expect(calls).toHaveLength(1);
    // The misses, each once, joined by an added token.
    expect(calls[0]).toContain('<|endoftext|> handler<|endoftext|>');
    expect(await cached.encode(`${text}${text}`)).toEqual(await native.encode(`${text}${text}`));
    expect(calls).toHaveLength(1);
    // A line with non-ASCII characters goes to the inner tokenizer whole; the ASCII lines do not.
    const mixed = `${text}# café — ok\n${text}`;
    expect(await cached.encode(mixed)).toEqual(await native.encode(mixed));
    expect(calls).toEqual([calls[0], '# café — ok\n']);
  });

  it('returns each caller its own ids when many encodes run at once', async () => {
    const cached = withPretokenCache(native, files.tokenizerJson, { maxEntries: 256 });
    const next = createRng(5);
    const texts = Array.from({ length: 200 }, (_, i) => {
      const words = Array.from({ length: 5 + Math.floor(next() * 300) }, () => Math.floor(next() * 1e5).toString(36));
      return `request ${i}: ${words.join(i % 3 ? ' ' : '\n  ')}${i % 4 ? '' : ' — ü'}`;
    });
    const results = await Promise.all(texts.map((t) => cached.encode(t)));
    const expected = await native.encodeBatch(texts);
    results.forEach((ids, i) => expect(ids, texts[i]!.slice(0, 20)).toEqual(expected[i]));
  });

  it('is not applied to a tokenizer.json of another shape', () => {
    const json = files.tokenizerJson as Record<string, unknown>;
    const variants: object[] = [
      { ...json, normalizer: { type: 'NFKC' } },
      { ...json, pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, use_regex: true } },
      { ...json, model: { ...(json.model as object), byte_fallback: true } },
      { ...json, added_tokens: [{ id: 1, content: '<x>', single_word: false, lstrip: true, rstrip: false, normalized: false }] },
    ];
    for (const variant of variants) {
      const tk = withPretokenCache(native, variant);
      expect(tk).toBe(native);
      expect(tk.pretokenCache).toBe(false);
    }
  });
});

describe('choosing the tokenizer', () => {
  it('puts the pre-token cache in front by default, and not with tokenizerCache false', async () => {
    const on = await loadCodec();
    expect(on.tokenizer.pretokenCache).toBe(true);
    expect(on.tokenizer.kind).toBe('native');
    const off = await loadCodec({ tokenizerCache: false });
    expect(off.tokenizer.pretokenCache).toBe(false);
    const text = 'x = 1\n'.repeat(100);
    expect(await on.tokenizer.encode(text)).toEqual(await off.tokenizer.encode(text));
  });

  it('puts the pre-token cache in front of the pure-JS tokenizer too', async () => {
    const codec = await loadCodec({ tokenizer: 'js' });
    expect(codec.tokenizer.kind).toBe('js');
    expect(codec.tokenizer.pretokenCache).toBe(true);
    for (const [name, text] of adversarial()) {
      for (const round of ['cold', 'warm']) {
        const mismatch = firstMismatch(text, js.encode(text), await codec.tokenizer.encode(text), ['pure-JS', 'cached pure-JS']);
        if (mismatch) expect.fail(`${round}, ${name}: ${mismatch}`);
      }
    }
  });

  it('uses the pure-JS tokenizer when asked, with the same ids and decode', async () => {
    const tk = await createTokenizer(files, 'js');
    expect(tk.kind).toBe('js');
    const text = '<|im_start|>user\nnaïve café 👍🏽<|im_end|>';
    expect(await tk.encode(text)).toEqual(js.encode(text));
    expect(tk.decode(js.encode(text))).toBe(text);
    expect(tk.tokenId('<|im_end|>')).toBe(js.tokenId('<|im_end|>'));
  });

  it('uses the native tokenizer by default', async () => {
    const tk = await createTokenizer(files);
    expect(tk.kind).toBe('native');
    const text = 'x = 1\n'.repeat(2000);
    expect(await tk.encode(text)).toEqual(js.encode(text));
  });
});
