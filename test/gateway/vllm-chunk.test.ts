import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MalformedChunkError, parseCompletionChunk, parseTokenId } from '../../gateway/backends/vllm-chunk.js';

/** The zod schema the hand-written check replaced: the oracle for what it accepts. */
const CompletionSchema = z.object({
  choices: z.array(
    z.object({
      logprobs: z.object({ tokens: z.array(z.string()), token_logprobs: z.array(z.number().nullable()) }).nullish(),
      finish_reason: z.string().nullish(),
    }),
  ),
  usage: z
    .object({
      prompt_tokens: z.number().int(),
      completion_tokens: z.number().int(),
      prompt_tokens_details: z.object({ cached_tokens: z.number().int().nullish() }).nullish(),
    })
    .nullish(),
});

const choice = (logprobs: unknown, finish: unknown = null) => ({ index: 0, text: 'x', logprobs, finish_reason: finish, stop_reason: null });
const lp = (tokens: unknown, tokenLogprobs: unknown) => ({ tokens, token_logprobs: tokenLogprobs, text_offset: [0], top_logprobs: [] });
const usage = (over: Record<string, unknown> = {}) => ({ prompt_tokens: 30, completion_tokens: 2, total_tokens: 32, ...over });

const VALID: unknown[] = [
  { id: 'cmpl-1', object: 'text_completion', created: 1, model: 'm', choices: [choice(lp(['token_id:7'], [-0.5]))] },
  { choices: [choice(lp(['token_id:7', 'token_id:8'], [-0.5, 0]), 'stop')], usage: null },
  { choices: [choice(lp([], []), 'length')] },
  { choices: [choice(lp(['a'], [null]))] },
  { choices: [choice(null)] },
  { choices: [{}] },
  { choices: [choice(undefined, undefined)] },
  { choices: [] },
  { choices: [], usage: usage() },
  { choices: [], usage: usage({ prompt_tokens_details: null }) },
  { choices: [], usage: usage({ prompt_tokens_details: {} }) },
  { choices: [], usage: usage({ prompt_tokens_details: { cached_tokens: 16 } }) },
  { choices: [], usage: usage({ prompt_tokens_details: { cached_tokens: null } }) },
  { choices: [choice(lp(['token_id:1'], [-1e-300]))], usage: usage({ prompt_tokens: 2 ** 53 - 1 }) },
];

const MALFORMED: unknown[] = [
  null,
  [],
  'data',
  7,
  {},
  { choices: null },
  { choices: {} },
  { choices: [null] },
  { choices: [[]] },
  { choices: ['x'] },
  { choices: [choice('lp')] },
  { choices: [choice([])] },
  { choices: [choice({})] },
  { choices: [choice(lp(null, []))] },
  { choices: [choice(lp(['token_id:7'], null))] },
  { choices: [choice(lp([7], [-0.5]))] },
  { choices: [choice(lp(['token_id:7', null], [-0.5, -1]))] },
  { choices: [choice(lp(['token_id:7'], ['-0.5']))] },
  { choices: [choice(lp(['token_id:7'], [Infinity]))] },
  { choices: [choice(lp(['token_id:7'], [NaN]))] },
  { choices: [choice(lp(['token_id:7'], [[-0.5]]))] },
  { choices: [choice(lp([], []), 1)] },
  { choices: [choice(lp([], []), { type: 'stop' })] },
  { choices: [choice(lp([], []), false)] },
  { choices: [choice(lp([], [])), choice('second is bad')] },
  { choices: [], usage: 'none' },
  { choices: [], usage: [] },
  { choices: [], usage: {} },
  { choices: [], usage: usage({ prompt_tokens: 1.5 }) },
  { choices: [], usage: usage({ prompt_tokens: '30' }) },
  { choices: [], usage: usage({ prompt_tokens: 2 ** 53 }) },
  { choices: [], usage: usage({ completion_tokens: undefined }) },
  { choices: [], usage: usage({ completion_tokens: null }) },
  { choices: [], usage: usage({ prompt_tokens_details: 16 }) },
  { choices: [], usage: usage({ prompt_tokens_details: [] }) },
  { choices: [], usage: usage({ prompt_tokens_details: { cached_tokens: 1.5 } }) },
  { choices: [], usage: usage({ prompt_tokens_details: { cached_tokens: '16' } }) },
];

describe('parseCompletionChunk', () => {
  it('accepts what the zod schema accepts, and reads the same fields from it', () => {
    for (const chunk of VALID) {
      const expected = CompletionSchema.parse(chunk);
      const got = parseCompletionChunk(chunk);
      expect(got.choices.map((c) => ({ logprobs: c.logprobs && { tokens: c.logprobs.tokens, token_logprobs: c.logprobs.token_logprobs }, finish_reason: c.finish_reason }))).toEqual(expected.choices);
      expect(got.usage && { prompt_tokens: got.usage.prompt_tokens, completion_tokens: got.usage.completion_tokens, prompt_tokens_details: got.usage.prompt_tokens_details }).toEqual(expected.usage);
    }
  });

  it('rejects what the zod schema rejects, naming the field', () => {
    for (const chunk of MALFORMED) {
      expect(CompletionSchema.safeParse(chunk).success, JSON.stringify(chunk)).toBe(false);
      expect(() => parseCompletionChunk(chunk), JSON.stringify(chunk)).toThrow(MalformedChunkError);
    }
    expect(() => parseCompletionChunk({ choices: [choice(lp(['token_id:7'], ['-0.5']))] })).toThrow(
      'choices[0].logprobs.token_logprobs[0] must be a number or null, not a string',
    );
    expect(() => parseCompletionChunk({ choices: [] , usage: usage({ completion_tokens: undefined }) })).toThrow('usage.completion_tokens must be a whole number, not missing');
  });
});

describe('parseTokenId', () => {
  const TOKEN_ID = /^token_id:(\d{1,10})$/;
  const reference = (token: string) => {
    const match = TOKEN_ID.exec(token);
    return match ? Number(match[1]) : undefined;
  };

  it('reads exactly the labels the regular expression `^token_id:(\\d{1,10})$` reads, as the same ids', () => {
    const labels = [
      'token_id:0', 'token_id:7', 'token_id:151643', 'token_id:0007', 'token_id:4294967295', 'token_id:9999999999',
      'token_id:12345678901', 'token_id:', 'token_id', 'token_id:-1', 'token_id:+1', 'token_id: 1', 'token_id:1 ',
      'token_id:1\n', '\ntoken_id:1', ' token_id:1', 'token_id:1.5', 'token_id:1e3', 'token_id:0x1f', 'Token_id:1',
      'token_id:١٢', 'token_id:１', 'token_id:1a', 'token_id:/', 'token_id::', 'xtoken_id:1', 'token_ids:1', '', 'hello',
    ];
    for (const label of labels) expect(parseTokenId(label), label).toBe(reference(label));
    expect(labels.filter((label) => reference(label) !== undefined)).toHaveLength(6);
  });
});
