import { describe, expect, it } from 'vitest';
import { builtinTermination } from '../../workflows/builtin-termination.js';

describe('built-in agent: termination reason', () => {
  it('names a reply cut by max_tokens max_tokens, not max_turns', () => {
    expect(builtinTermination('budget')).toBe('max_tokens');
  });

  it('names an answer without a call, or a submission, stop', () => {
    expect(builtinTermination('no_tool_call')).toBe('stop');
    expect(builtinTermination('submitted')).toBe('stop');
  });
});
