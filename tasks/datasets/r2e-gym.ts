/**
 * R2E-Gym rows (R2E-Gym/R2E-Gym-Subset, R2E-Gym-Lite): repo_name, commit_hash, docker_image,
 * problem_statement, expected_output_json, parsed_commit_content. As R2E-Gym's runtime has it,
 * the image holds the repository at /testbed (with its venv at /testbed/.venv), the tests at
 * /r2e_tests (or /testbed/r2e_tests) and the evaluation script at /testbed/run_tests.sh, which
 * runs `pytest -rA r2e_tests` from /testbed; the runtime moves the last two out of the agent's
 * sight and links the tests back into the repository for the test run only.
 *
 * Here those three paths are the task's `environment.hidden_paths`: the agent's sandbox never
 * sees them, the reward's does. The test command links /r2e_tests in when the workspace has no
 * r2e_tests, runs run_tests.sh as published, and renames each test of pytest's short summary as
 * R2E-Gym's parser does (the part after the file, `::` read as `.`), prefixed `r2e_tests::` so
 * that our pytest parser reads it; the test lists use the same names.
 *
 * What of their scoring we do not reproduce: R2E-Gym rewards a run whose statuses equal
 * expected_output_json exactly; we require the tests expected to PASS to pass (all in
 * FAIL_TO_PASS, as the row does not say which passed before the fix) and ignore those expected
 * to fail or error, and tests the run has beyond those expected. A test id holding a space outside its brackets is cut at the space, by
 * pytest's summary and by our parser alike. No canaries guard the run: they go into test-patch
 * files, and these tests come in the image (`canaries: 0` in the result).
 *
 * The gold `patch` is left empty: parsed_commit_content keeps each hunk's lines grouped by kind
 * (context before, removed, added, context after), so a hunk with more than one change block
 * cannot be put back in order, and an inexact gold patch would be worse than none.
 */
import { z } from 'zod';
import { loadError, type RowLocation } from '../load-error.js';
import type { DatasetOptions } from './options.js';
import { parsePublishedRow, type PublishedShape } from './published.js';
import type { UnknownFields } from './report.js';

const REPO = '/testbed';
/** Where R2E-Gym images keep what the runtime hides from the agent. */
export const R2E_HIDDEN_PATHS = ['/r2e_tests', `${REPO}/r2e_tests`, `${REPO}/run_tests.sh`];
/** The prefix of our ids for R2E-Gym's test names, which carry no file. */
export const R2E_TEST_PREFIX = 'r2e_tests::';

/** A JSON-encoded object, as R2E-Gym publishes expected_output_json and parsed_commit_content. */
function jsonString<T extends z.ZodType>(
  schema: T,
): z.ZodPipe<z.ZodPipe<z.ZodString, z.ZodTransform<unknown, string>>, T> {
  return z.string().transform((text, ctx): unknown => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'not valid JSON' });
      return z.NEVER;
    }
  }).pipe(schema);
}

const ParsedCommit = z.looseObject({ old_commit_hash: z.string().min(1) });

const R2eGymRow = z.looseObject({
  repo_name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'a repository name'),
  commit_hash: z.string().regex(/^[0-9a-f]{7,64}$/, 'a commit hash'),
  docker_image: z.string().min(1),
  problem_statement: z.string().min(1),
  expected_output_json: jsonString(z.record(z.string(), z.string())),
  parsed_commit_content: jsonString(ParsedCommit),
});

/** Published fields that map onto nothing of ours. */
const UNUSED = [
  'execution_result_content',
  'modified_files',
  'modified_entity_summaries',
  'relevant_files',
  'num_non_test_files',
  'num_non_test_func_methods',
  'num_non_test_lines',
  'prompt',
];

const SHAPE: PublishedShape<typeof R2eGymRow> = {
  dataset: 'R2E-Gym',
  schema: R2eGymRow,
  unused: UNUSED,
};

/** Rewrites pytest's short summary lines into R2E-Gym's test names (their parse_log_pytest). */
const RENAME = `awk '/^(PASSED|FAILED|ERROR|XFAIL|XPASS) [^ ]*::/ { n = index($2, "::"); id = substr($2, n + 2); gsub(/::/, ".", id); $2 = "${R2E_TEST_PREFIX}" id } { print }'`;

/** R2E-Gym's runtime puts the repository's venv first on PATH. */
const TEST_COMMAND = [
  `export PATH=${REPO}/.venv/bin:$PATH`,
  '[ -e r2e_tests ] || ln -s /r2e_tests r2e_tests',
  `bash run_tests.sh 2>&1 | ${RENAME}`,
].join('\n');

/** Whether a row has R2E-Gym's identifying fields. */
export function isR2eGymRow(value: Record<string, unknown>): boolean {
  return 'docker_image' in value && ('expected_output_json' in value || 'commit_hash' in value);
}

export function mapR2eGymRow(
  value: unknown,
  at: RowLocation,
  _options: DatasetOptions,
  unknown: UnknownFields,
): Record<string, unknown> {
  const row = parsePublishedRow(SHAPE, value, at, unknown);
  const id = `${row.repo_name}-${row.commit_hash}`;
  // R2E-Gym's keys are cut at " - " (the message of a FAILED line) before comparing.
  const expected = Object.entries(row.expected_output_json).map(([name, status]) => [name.split(' - ')[0] ?? name, status]);
  const passing = expected.filter(([, status]) => status === 'PASSED').map(([name]) => `${R2E_TEST_PREFIX}${name}`);
  if (passing.length === 0) {
    throw loadError(`task ${id}: expected_output_json: no test is expected to pass`, at);
  }
  return {
    instance_id: id,
    repo: row.repo_name,
    base_commit: row.parsed_commit_content.old_commit_hash,
    problem_statement: row.problem_statement,
    FAIL_TO_PASS: [...new Set(passing)],
    PASS_TO_PASS: [],
    workspace: { kind: 'image', path: REPO },
    environment: { image: row.docker_image, hidden_paths: R2E_HIDDEN_PATHS },
    test_command: TEST_COMMAND,
    log_parser: 'pytest',
  };
}
