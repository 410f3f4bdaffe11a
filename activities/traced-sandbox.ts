import { Context } from '@temporalio/activity';
import type { Command, ExecOptions, ExecResult, SandboxProvider } from '../sandbox/provider.js';
import { wrapSandbox } from '../sandbox/wrap.js';
import { episodeSpanContext, inSpan, tracingEnabled, type SpanParent } from '../telemetry/tracing.js';

/** Longest command text a span keeps. */
const MAX_COMMAND_CHARS = 200;

/** The episode span of the episode whose activity runs now; null outside an episode's activity. */
function currentEpisodeSpan(): SpanParent {
  let info;
  try {
    info = Context.current().info;
  } catch {
    return null;
  }
  // An episode workflow's id is its episode id (workflows/episode.ts).
  const workflowId = info.workflowExecution?.workflowId;
  return info.workflowType === 'episodeWorkflow' && workflowId ? episodeSpanContext(workflowId) : null;
}

function commandText(command: Command): string {
  return (Array.isArray(command) ? command.join(' ') : command.shell).slice(0, MAX_COMMAND_CHARS);
}

/**
 * The provider whose every `exec` is a `sandbox.exec` span under the running episode: the one seam
 * all sandbox commands (agent tools, black-box agents, rewards) go through. With tracing off it is
 * the provider itself.
 */
export function tracedSandbox(provider: SandboxProvider): SandboxProvider {
  if (!tracingEnabled()) return provider;
  const exec = (id: string, command: Command, options?: ExecOptions): Promise<ExecResult> =>
    inSpan(
      'sandbox.exec',
      currentEpisodeSpan(),
      { 'rollout.sandbox_id': id, 'rollout.command': commandText(command) },
      () => provider.exec(id, command, options),
      (r) => ({ 'rollout.exit_code': r.exitCode, 'rollout.timed_out': r.timedOut, 'rollout.duration_ms': r.durationMs }),
    );
  return wrapSandbox(provider, { exec });
}
