/**
 * SWE-bench and SWE-bench Verified rows (princeton-nlp/SWE-bench, SWE-bench/SWE-bench_Verified,
 * as the harness of swebench 4.x reads them): instance_id, repo, base_commit, patch, test_patch,
 * problem_statement, FAIL_TO_PASS and PASS_TO_PASS (lists or JSON strings of lists). The task runs
 * in the instance's published image, whose name the harness derives from the id
 * (`<namespace>/sweb.eval.x86_64.<id, lower case, "__" spelt "_1776_">:latest`), on the repository
 * at /testbed; tests run as tasks/datasets/repo-tests.ts says, unless the caller's
 * `testCmd`/`logParser` replace it. A row may name its image itself, in `image` (SWE-bench 5.x
 * rows, e.g. SWE-bench Multilingual) or `image_name` (mini-swe-agent and SWE-smith rows), and its
 * parser in `log_parser` (5.x rows: a harness parser name, tasks/datasets/parser-names.ts).
 * A 5.x row's `eval_script` is not run: it checks out the base commit by hash, which the reward's
 * fresh repository does not have; the test command comes from the table or `testCmd`.
 */
import { z } from 'zod';
import { loadError, type RowLocation } from '../load-error.js';
import type { LogParser } from '../schema.js';
import type { DatasetOptions } from './options.js';
import { knownParserNames, logParserOf } from './parser-names.js';
import { parsePublishedRow, patchFiles, PublishedList, sweBenchCore, type PublishedShape } from './published.js';
import type { UnknownFields } from './report.js';
import { repoTests } from './repo-tests.js';

const SweBenchRow = z.looseObject({
  instance_id: z.string().min(1),
  repo: z.string().min(1),
  base_commit: z.string().min(1),
  patch: z.string(),
  test_patch: z.string(),
  problem_statement: z.string(),
  FAIL_TO_PASS: PublishedList,
  PASS_TO_PASS: PublishedList,
  image: z.string().min(1).optional(),
  image_name: z.string().min(1).optional(),
  log_parser: z.string().min(1).optional(),
});
type SweBenchRow = z.infer<typeof SweBenchRow>;

/**
 * Published fields that map onto nothing of ours: hints are not shown, versions are in the image,
 * `eval_script` is not run (above), and `eval_type` (fail_only for a few repositories) is not
 * followed: PASS_TO_PASS is always scored.
 */
const UNUSED = [
  'hints_text',
  'created_at',
  'version',
  'environment_setup_commit',
  'difficulty',
  'eval_script',
  'eval_type',
];

/**
 * The harness's remote instance image (swebench/harness/test_spec/test_spec.py,
 * `instance_image_key`): the whole `namespace/key` has "__" spelt "_1776_", as there.
 */
function sweBenchImage(instanceId: string, namespace = 'swebench'): string {
  return `${namespace}/sweb.eval.x86_64.${instanceId.toLowerCase()}:latest`.replaceAll('__', '_1776_');
}

/** A row of the SWE-bench shape onto our task fields; `image` names the instance's image. */
export function mapSweBenchShape(
  dataset: string,
  value: unknown,
  at: RowLocation,
  options: DatasetOptions,
  unknown: UnknownFields,
  image: (row: SweBenchRow) => string,
): Record<string, unknown> {
  const shape: PublishedShape<typeof SweBenchRow> = { dataset, schema: SweBenchRow, unused: UNUSED };
  const row = parsePublishedRow(shape, value, at, unknown);
  const tests = testsOf(row, at, options);
  return {
    ...sweBenchCore(row),
    workspace: { kind: 'image', path: '/testbed' },
    environment: { image: row.image ?? row.image_name ?? image(row) },
    ...tests,
  };
}

function testsOf(
  row: SweBenchRow,
  at: RowLocation,
  options: DatasetOptions,
): { test_command: string; log_parser: LogParser } {
  const table = repoTests(row.repo, patchFiles(row.test_patch));
  const rowParser = row.log_parser === undefined ? undefined : logParserOf(row.log_parser);
  if (row.log_parser !== undefined && rowParser === undefined) {
    throw loadError(
      `task ${row.instance_id}: log_parser: "${row.log_parser}" has no parser here (known: ${knownParserNames().join(', ')})`,
      at,
    );
  }
  const command = options.testCmd ?? table?.test_command;
  if (command === undefined) {
    throw loadError(
      `task ${row.instance_id}: repo: no default test command for ${row.repo}; give testCmd and logParser (--test-cmd, --log-parser)`,
      at,
    );
  }
  if (options.testCmd === undefined && rowParser !== undefined && rowParser !== table?.log_parser) {
    throw loadError(
      `task ${row.instance_id}: log_parser: the row's parser ${rowParser} does not read the default command's output (${table?.log_parser ?? 'none'}); give testCmd`,
      at,
    );
  }
  // The caller's parser goes with the caller's command; the table's with the table's.
  const parser = options.testCmd !== undefined ? (options.logParser ?? rowParser ?? table?.log_parser) : table?.log_parser;
  if (parser === undefined) {
    throw loadError(
      `task ${row.instance_id}: log_parser: no log parser for ${row.repo}; give logParser (--log-parser) with testCmd`,
      at,
    );
  }
  return { test_command: command, log_parser: parser };
}

export function mapSweBenchRow(
  value: unknown,
  at: RowLocation,
  options: DatasetOptions,
  unknown: UnknownFields,
): Record<string, unknown> {
  return mapSweBenchShape('SWE-bench', value, at, options, unknown, (row) =>
    sweBenchImage(row.instance_id, options.namespace),
  );
}
