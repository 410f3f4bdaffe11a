import { describe, expect, it } from 'vitest';
import { canonicalKey, messageDigest, type ChatMessage } from '../../gateway/codec/index.js';

const MESSAGES: ChatMessage[] = [
  { role: 'system', content: 'You are an agent.' },
  { role: 'user', content: 'You are an agent.' },
  { role: 'user', content: 'Fix it' },
  { role: 'user', content: 'Fix it ' },
  { role: 'tool', content: 'Fix it' },
  { role: 'tool', content: 'Fix it', tool_call_id: 'call_1' },
  { role: 'tool', content: 'Fix it', tool_call_id: 'call_2' },
  { role: 'assistant', content: 'Done.' },
  { role: 'assistant', content: ' Done.\n', reasoning_content: 'echoed back, or not' },
  { role: 'assistant', content: 'Done.', tool_calls: [{ name: 'shell', arguments: { command: 'ls', cwd: '/' } }] },
  { role: 'assistant', content: 'Done.', tool_calls: [{ name: 'shell', arguments: { cwd: '/', command: 'ls' } }] },
  { role: 'assistant', content: 'Done.', tool_calls: [{ name: 'shell', arguments: { command: 'ls -la' } }] },
  { role: 'assistant', content: 'Done.', tool_calls: [{ name: 'edit', arguments: { command: 'ls', cwd: '/' } }] },
  { role: 'assistant', content: 'a', tool_calls: [] },
  { role: 'user', content: 'naïve ✓ 😀' },
];

describe('messageDigest', () => {
  it('tells messages apart exactly when their canonical keys differ', () => {
    for (const a of MESSAGES) {
      for (const b of MESSAGES) expect(messageDigest(a) === messageDigest(b)).toBe(canonicalKey(a) === canonicalKey(b));
    }
  });

  it('is 22 characters (128 bits and more) whatever the message size', () => {
    expect(messageDigest({ role: 'tool', content: 'x'.repeat(100_000) })).toMatch(/^[A-Za-z0-9+/]{22}$/);
  });

  it('keeps the digests chains were keyed by before, lone surrogates and call arguments included', () => {
    // Values of the Hash-object form (createHash, one update per length prefix and part).
    expect(messageDigest({ role: 'user', content: 'naïve ✓ 😀 \ud800 lone' })).toBe('EUwxIGpRHAs4pmQBpnjJaZ');
    expect(messageDigest({ role: 'assistant', content: ' Done.\n', tool_calls: [{ name: 'shell', arguments: { cwd: '/', command: 'ls' } }] })).toBe(
      'ktDLwxV1LrEIGe3olW5rV1',
    );
    expect(messageDigest({ role: 'tool', content: 'x'.repeat(5000) })).toBe('YEtKOhNdStD/SeIkg0SQXC');
  });
});
