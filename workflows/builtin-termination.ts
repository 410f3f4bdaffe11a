import type { AgentStepResult } from '../agents/builtin/step.js';

/**
 * The episode's termination reason once a built-in agent step is done. `budget` is a reply cut at
 * `finish_reason: length` with no call: a session budget the gateway answered (its own reason,
 * `max_turns` or `context_length`, wins when the session closes), else a turn cut by
 * `max_tokens`, which is no turn budget.
 */
export function builtinTermination(reason: AgentStepResult['reason']): 'stop' | 'max_tokens' {
  return reason === 'budget' ? 'max_tokens' : 'stop';
}
