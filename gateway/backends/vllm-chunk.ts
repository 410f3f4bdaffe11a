/**
 * A streamed vLLM completion chunk, checked by hand rather than by a zod schema: the stream has one
 * chunk per sampled token, and a schema copies every object it checks. As strict as the schema it
 * replaces (every field the gateway reads has its type checked; other fields are left alone).
 */

/**
 * A choice of a chunk. The ids are read from `logprobs.tokens`, which `return_tokens_as_token_ids`
 * makes `token_id:<id>`; `return_token_ids` is not asked for, since it also sends the whole prompt
 * back in the first chunk.
 */
export interface CompletionChoice {
  logprobs?: { tokens: string[]; token_logprobs: (number | null)[] } | null;
  finish_reason?: string | null;
}

export interface CompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number | null } | null;
}

export interface CompletionChunk {
  choices: CompletionChoice[];
  usage?: CompletionUsage | null;
}

/** A chunk that is not a completion chunk; the message names the field and what it should be. */
export class MalformedChunkError extends Error {
  override name = 'MalformedChunkError';
}

/** `value` (a parsed chunk) as a completion chunk, or a MalformedChunkError. */
export function parseCompletionChunk(value: unknown): CompletionChunk {
  const chunk = object(value, 'chunk');
  const choices = chunk.choices;
  if (!Array.isArray(choices)) throw malformed('choices', 'an array', choices);
  for (let i = 0; i < choices.length; i++) checkChoice(choices[i], i);
  const usage = chunk.usage;
  if (usage != null) checkUsage(usage);
  return chunk as unknown as CompletionChunk;
}

function checkChoice(value: unknown, index: number): void {
  const choice = object(value, `choices[${index}]`);
  const logprobs = choice.logprobs;
  if (logprobs != null) {
    const { tokens, token_logprobs: tokenLogprobs } = object(logprobs, `choices[${index}].logprobs`);
    if (!Array.isArray(tokens)) throw malformed(`choices[${index}].logprobs.tokens`, 'an array', tokens);
    for (let i = 0; i < tokens.length; i++) {
      if (typeof tokens[i] !== 'string') throw malformed(`choices[${index}].logprobs.tokens[${i}]`, 'a string', tokens[i]);
    }
    if (!Array.isArray(tokenLogprobs)) throw malformed(`choices[${index}].logprobs.token_logprobs`, 'an array', tokenLogprobs);
    for (let i = 0; i < tokenLogprobs.length; i++) {
      const logprob: unknown = tokenLogprobs[i];
      if (logprob !== null && !isNumber(logprob)) throw malformed(`choices[${index}].logprobs.token_logprobs[${i}]`, 'a number or null', logprob);
    }
  }
  const finishReason = choice.finish_reason;
  if (finishReason != null && typeof finishReason !== 'string') throw malformed(`choices[${index}].finish_reason`, 'a string', finishReason);
}

function checkUsage(value: unknown): void {
  const usage = object(value, 'usage');
  integer(usage.prompt_tokens, 'usage.prompt_tokens');
  integer(usage.completion_tokens, 'usage.completion_tokens');
  const details = usage.prompt_tokens_details;
  if (details != null) {
    const cached = object(details, 'usage.prompt_tokens_details').cached_tokens;
    if (cached != null) integer(cached, 'usage.prompt_tokens_details.cached_tokens');
  }
}

function object(value: unknown, path: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw malformed(path, 'an object', value);
  return value as Record<string, unknown>;
}

/** A whole number as zod's `int()` takes it: within the safe range. */
function integer(value: unknown, path: string): void {
  if (!Number.isSafeInteger(value)) throw malformed(path, 'a whole number', value);
}

/** A number as zod's `number()` takes it: finite. */
function isNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

function malformed(path: string, expected: string, got: unknown): MalformedChunkError {
  const kind = got === undefined ? 'missing' : got === null ? 'null' : Array.isArray(got) ? 'an array' : `a ${typeof got}`;
  return new MalformedChunkError(`${path} must be ${expected}, not ${kind}`);
}

const TOKEN_ID_PREFIX = 'token_id:';

/**
 * The id of a `token_id:<id>` label with 1 to 10 digits (the whole label, nothing around it), or
 * undefined; read by hand, not by a regular expression, as every sampled token has one.
 */
export function parseTokenId(token: string): number | undefined {
  const length = token.length;
  if (length <= TOKEN_ID_PREFIX.length || length > TOKEN_ID_PREFIX.length + 10 || !token.startsWith(TOKEN_ID_PREFIX)) return undefined;
  let id = 0;
  for (let i = TOKEN_ID_PREFIX.length; i < length; i++) {
    const digit = token.charCodeAt(i) - 0x30;
    if (digit < 0 || digit > 9) return undefined;
    id = id * 10 + digit;
  }
  return id;
}
