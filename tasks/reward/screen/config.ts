/**
 * How the screen is configured: per task (`reward.screen` of a tests reward, tasks/schema.ts) and
 * per stack (`reward.screen` of the configuration, stack/config.ts), the same shape at both.
 */
import { z } from 'zod';
import { RULE_IDS } from './rules.js';

export const ScreenConfigSchema = z
  .object({
    /** Whether the agent's diff is screened before the tests run. Default true. */
    enabled: z.boolean().default(true),
    /**
     * Rule ids (tasks/reward/screen/rules.ts) not applied, for code that must do what a rule
     * flags. Unknown ids are errors: a misspelt id must not leave a rule on. Default `[]`.
     */
    disabledRules: z.array(z.enum(RULE_IDS as [string, ...string[]])).default([]),
  })
  .strict();
export type ScreenConfig = z.infer<typeof ScreenConfigSchema>;

/**
 * The ids of the rules to apply, as the stack and the task together set them (either left out:
 * the defaults): either may turn the screen off (no rules), and a rule either turns off is off.
 */
export function activeRules(...configs: (ScreenConfig | undefined)[]): ReadonlySet<string> {
  const given = configs.filter((c): c is ScreenConfig => c !== undefined);
  if (given.some((c) => !c.enabled)) return new Set();
  const off = new Set(given.flatMap((c) => c.disabledRules));
  return new Set(RULE_IDS.filter((id) => !off.has(id)));
}
