import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { loadJsTokenizer } from '../../gateway/codec/js-tokenizer.js';

const REPO = path.resolve(import.meta.dirname, '../..');
const TEXT = 'naïve café 👍🏽 <|im_end|>';

it('falls back to the pure-JS tokenizer, with one warning line, where the native module does not load', async () => {
  const script = `
    const { loadCodec } = await import(${JSON.stringify(path.join(REPO, 'gateway/codec/index.ts'))});
    const codec = await loadCodec();
    console.log(JSON.stringify({ kind: codec.tokenizer.kind, ids: await codec.tokenizer.encode(${JSON.stringify(TEXT)}) }));
  `;
  const { stdout, stderr } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', '--import', path.join(REPO, 'test/helpers/no-native-tokenizer.mjs'), '--input-type=module', '-e', script],
    { cwd: REPO },
  );
  const out = JSON.parse(stdout) as { kind: string; ids: number[] };
  expect(out.kind).toBe('js');
  expect(out.ids).toEqual((await loadJsTokenizer()).encode(TEXT));
  const warnings = stderr.split('\n').filter((l) => l.trim() !== '');
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toMatch(/^native tokenizer unavailable \(Cannot find module 'tokenizers'\); using the pure-JS tokenizer$/);
}, 60_000);
