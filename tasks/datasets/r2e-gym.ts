/**
 * R2E-Gym rows (R2E-Gym/R2E-Gym-Lite, R2E-Gym-Subset): repo_name, commit_hash, docker_image,
 * problem_statement, expected_output_json, parsed_commit_content. They are recognised so that a
 * file of them fails with the reason instead of a schema error: their hidden tests live inside
 * the image (/r2e_tests) and are scored against expected_output_json, with no test_patch to
 * apply, which neither reward of the task model (`tests`, `script`) expresses; and those tests
 * sit in the image the agent's sandbox runs on, readable by the agent.
 */
import { z } from 'zod';
import { loadError, type RowLocation } from '../load-error.js';

const R2eGymRow = z.looseObject({
  repo_name: z.string().min(1),
  commit_hash: z.string().min(1),
  docker_image: z.string().min(1),
});

/** Whether a row has R2E-Gym's identifying fields. */
export function isR2eGymRow(value: Record<string, unknown>): boolean {
  return 'docker_image' in value && ('expected_output_json' in value || 'commit_hash' in value);
}

export function mapR2eGymRow(value: unknown, at: RowLocation): never {
  const parsed = R2eGymRow.safeParse(value);
  if (!parsed.success) throw loadError(`invalid R2E-Gym row:\n${z.prettifyError(parsed.error)}`, at);
  throw loadError(
    `task ${parsed.data.repo_name}@${parsed.data.commit_hash}: expected_output_json: R2E-Gym scores the tests inside its image (/r2e_tests) against expected_output_json, with no test_patch, and the agent's sandbox would see those tests; the task model has no reward for that, so R2E-Gym rows cannot load yet`,
    at,
  );
}
