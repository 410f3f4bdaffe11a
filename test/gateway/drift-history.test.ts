import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../gateway/codec/index.js';
import { Chain } from '../../gateway/session/chain.js';
import { driftInputs, historyOf } from '../../gateway/session/drift.js';
import type { StoredTurn } from '../../trajectory/index.js';

function turn(chainIndex: number, seq: number, messages: ChatMessage[], reply: string, rolledBack = false): StoredTurn {
  return {
    sessionId: 's',
    chainIndex,
    seq,
    turnIndex: seq,
    promptDelta: [1],
    sampled: [2],
    logprobs: [-0.5],
    finishReason: 'stop',
    cachedTokens: 0,
    temperature: 1,
    logprobsMode: 'raw',
    version: 0,
    sampledVersions: [0],
    tLlmS: 0,
    messagesJson: JSON.stringify(messages),
    replyJson: JSON.stringify({ role: 'assistant', content: reply }),
    toolsJson: null,
    rolledBack,
  };
}

/** A chain with `turns` live turns over `tokens`. */
function chain(index: number, turns: number, tokens: number[]): Chain {
  const c = new Chain(index, undefined, '');
  c.tokens.append(tokens);
  c.turns = Array.from({ length: turns }, (_, seq) => ({ seq, start: 0, historyBefore: 0, sampledFrom: seq + 1, finishReason: 'stop' as const, toolCalls: 0, lastUserLength: undefined }));
  return c;
}

describe('driftInputs', () => {
  it("rebuilds each chain's history from its live stored turns, without rolled-back ones", () => {
    const user: ChatMessage = { role: 'user', content: 'Fix it.' };
    const tool: ChatMessage = { role: 'tool', content: 'ls output' };
    const retried: ChatMessage = { role: 'tool', content: 'ls output, again' };
    const chains = [chain(0, 2, [5, 6, 7]), chain(1, 1, [8]), chain(2, 0, [])];
    const inputs = driftInputs(chains, [
      turn(0, 0, [user], 'first'),
      turn(0, 1, [tool], 'dropped', true),
      turn(0, 2, [retried], 'second'),
      turn(1, 0, [{ role: 'user', content: 'A title?' }], 'Title'),
    ]);
    // A chain without turns has nothing to check.
    expect(inputs.map((i) => i.chainIndex)).toEqual([0, 1]);
    expect(historyOf(inputs[0]!)).toEqual([
      user,
      { role: 'assistant', content: 'first' },
      retried,
      { role: 'assistant', content: 'second' },
    ]);
    expect(historyOf(inputs[1]!)).toEqual([{ role: 'user', content: 'A title?' }, { role: 'assistant', content: 'Title' }]);
    expect(inputs[0]!.sampledFrom).toEqual([1, 2]);
    // The tokens are a copy: a later change to the chain does not reach a check under way.
    expect(Array.from(inputs[0]!.tokens)).toEqual([5, 6, 7]);
    chains[0]!.tokens.truncate(1);
    chains[0]!.tokens.append([9, 9]);
    expect(Array.from(inputs[0]!.tokens)).toEqual([5, 6, 7]);
  });
});
