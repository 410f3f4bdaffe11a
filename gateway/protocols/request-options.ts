import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import { InvalidRequestError } from '../session/errors.js';
import type { GatewaySession } from '../session/session.js';
import type { CallsAllowed } from '../session/turn-runner.js';

/**
 * Request options the gateway cannot honour by constraining sampling (it samples the policy's own
 * distribution): a forced tool, reasoning effort and thinking budgets are accepted and reported as
 * ignored (agents such as Claude Code force a tool on some requests and do not retry a 400),
 * `tool_choice: "none"` and a single-call limit shape only how the reply is presented.
 */

/** Every protocol's spelling: a string (OpenAI) or an object with a `type` (OpenAI named tools, Anthropic). */
const ToolChoice = z.union([z.string(), z.object({ type: z.string(), disable_parallel_tool_use: z.boolean().optional() }).passthrough()]).nullish();

/**
 * Which sampled calls the client gets: none under `tool_choice: "none"`, only the first when
 * parallel calls are off (`parallel_tool_calls: false`, Anthropic's `disable_parallel_tool_use`).
 * A forced call (`required`, `any`, a named tool) is answered as `auto` (see `ignoredOptions`).
 * Throws InvalidRequestError for a malformed choice.
 */
export function callsAllowed(toolChoice: unknown, parallelToolCalls: boolean | null | undefined): CallsAllowed {
  const parsed = ToolChoice.safeParse(toolChoice);
  if (!parsed.success) throw new InvalidRequestError(`tool_choice: ${z.prettifyError(parsed.error)}`);
  const choice = parsed.data;
  const type = typeof choice === 'string' ? choice : (choice?.type ?? 'auto');
  if (type === 'none') return 'none';
  const single = parallelToolCalls === false || (typeof choice === 'object' && choice?.disable_parallel_tool_use === true);
  return single ? 'first' : 'all';
}

/** The header naming the request options that were accepted but had no effect. */
export const IGNORED_HEADER = 'x-rollout-ignored';

const ReasoningOptions = z
  .object({
    reasoning_effort: z.unknown().optional(),
    reasoning: z.object({ effort: z.unknown().optional() }).passthrough().nullish(),
    thinking: z.object({ budget_tokens: z.unknown().optional() }).passthrough().nullish(),
  })
  .passthrough();

/** Whether a `tool_choice` forces a call, which sampling cannot be made to do. */
function forcesCall(toolChoice: unknown): boolean {
  const parsed = ToolChoice.safeParse(toolChoice);
  if (!parsed.success || parsed.data == null) return false;
  const type = typeof parsed.data === 'string' ? parsed.data : parsed.data.type;
  return type !== 'auto' && type !== 'none';
}

/** The options set in a request body that have no effect, by their dotted names: a forced tool, reasoning effort, thinking budgets. */
export function ignoredOptions(body: unknown): string[] {
  const parsed = ReasoningOptions.safeParse(body);
  if (!parsed.success) return [];
  const { reasoning_effort: effort, reasoning, thinking } = parsed.data;
  const set: [string, unknown][] = [
    ['tool_choice', forcesCall(parsed.data.tool_choice) ? parsed.data.tool_choice : undefined],
    ['reasoning_effort', effort],
    ['reasoning.effort', reasoning?.effort],
    ['thinking.budget_tokens', thinking?.budget_tokens],
  ];
  return set.filter(([, value]) => value != null).map(([name]) => name);
}

const warned = new WeakMap<GatewaySession, Set<string>>();

/**
 * Reports ignored options: in the answer's header (set on the raw response, so streamed and plain
 * answers carry it) and, once per session and option, in the log. Agents such as Codex send a
 * reasoning effort on every request; refusing it would break them, ignoring it silently would hide
 * that sampling is not what they asked for.
 */
export function reportIgnored(res: ServerResponse, session: GatewaySession, ignored: string[], log: (line: string) => void): void {
  if (ignored.length === 0) return;
  res.setHeader(IGNORED_HEADER, ignored.join(', '));
  const seen = warned.get(session) ?? new Set<string>();
  warned.set(session, seen);
  const fresh = ignored.filter((name) => !seen.has(name));
  fresh.forEach((name) => seen.add(name));
  if (fresh.length > 0) log(`session ${session.record.sessionId}: ignoring ${fresh.join(', ')} (the gateway samples the policy as configured)`);
}
