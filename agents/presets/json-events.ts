import { z } from 'zod';

const Event = z.object({ type: z.string() }).passthrough();

/**
 * How many lines of an agent's JSON-lines output are events of `type`; undefined when none are
 * (the agent printed no events, so its own count says nothing). Other lines are skipped.
 */
export function countJsonEvents(stdout: string, type: string): number | undefined {
  let count = 0;
  for (const line of stdout.split('\n')) {
    try {
      if (Event.parse(JSON.parse(line)).type === type) count++;
    } catch {
      // not an event line
    }
  }
  return count > 0 ? count : undefined;
}
