import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../gateway/codec/index.js';
import { historiesOf } from '../../gateway/session/drift.js';
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

describe('historiesOf', () => {
  it("rebuilds each chain's history from its live stored turns, without rolled-back ones", () => {
    const user: ChatMessage = { role: 'user', content: 'Fix it.' };
    const tool: ChatMessage = { role: 'tool', content: 'ls output' };
    const retried: ChatMessage = { role: 'tool', content: 'ls output, again' };
    const histories = historiesOf([
      turn(0, 0, [user], 'first'),
      turn(0, 1, [tool], 'dropped', true),
      turn(0, 2, [retried], 'second'),
      turn(1, 0, [{ role: 'user', content: 'A title?' }], 'Title'),
    ]);
    expect(histories.get(0)).toEqual([
      user,
      { role: 'assistant', content: 'first' },
      retried,
      { role: 'assistant', content: 'second' },
    ]);
    expect(histories.get(1)).toEqual([{ role: 'user', content: 'A title?' }, { role: 'assistant', content: 'Title' }]);
    expect(histories.get(2)).toBeUndefined();
  });
});
