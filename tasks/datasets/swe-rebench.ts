/**
 * SWE-rebench rows (nebius/SWE-rebench, and V2: nebius/SWE-rebench-V2): the SWE-bench fields plus
 * `install_config`, whose `test_cmd` (a command or a list of them) and `log_parser` (a function
 * name of SWE-rebench's log_parsers, e.g. `parse_log_pytest`) say how the tests run. The image is
 * V2's `image_name`, with the repository at `/<repository name>` (V2 images clone there) and
 * `test_cmd` run as it is; or V1's `docker_image`, built by SWE-rebench's SWE-bench fork with the
 * repository at /testbed in the conda env `testbed`, where, as in the harness's eval script, the
 * test patch's files are appended to the (last) test command.
 */
import { z } from 'zod';
import { loadError, type RowLocation } from '../load-error.js';
import type { DatasetOptions } from './options.js';
import { knownParserNames, logParserOf } from './parser-names.js';
import { parsePublishedRow, patchFiles, PublishedList, shellQuote, sweBenchCore, type PublishedShape } from './published.js';
import type { UnknownFields } from './report.js';

const InstallConfig = z.looseObject({
  test_cmd: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
  log_parser: z.string().min(1),
});

/** install_config keys used when the image was built: the image already holds their result. */
const INSTALL_UNUSED = [
  'install',
  'pre_install',
  'python',
  'packages',
  'pip_packages',
  'reqs_path',
  'env_yml_path',
  'env_vars',
  'docker_specs',
  'base_image_name',
  'no_use_env',
  'eval_commands',
  'test_directives',
];

const SweRebenchRow = z.looseObject({
  instance_id: z.string().min(1),
  repo: z.string().regex(/^[^/\s]+\/[^/\s]+$/, 'owner/name'),
  base_commit: z.string().min(1),
  patch: z.string(),
  test_patch: z.string(),
  problem_statement: z.string(),
  FAIL_TO_PASS: PublishedList,
  PASS_TO_PASS: PublishedList,
  install_config: InstallConfig,
  image_name: z.string().min(1).optional(),
  docker_image: z.string().min(1).optional(),
});

/** Published fields that map onto nothing of ours. */
const UNUSED = [
  'hints_text',
  'created_at',
  'version',
  'environment_setup_commit',
  'meta',
  'requirements',
  'environment',
  'license_name',
  'language',
  'FAIL_TO_FAIL',
  'PASS_TO_FAIL',
  'interface',
  'pr_description',
];

/** V1 images install the repository into the harness's conda env. */
const V1_TESTBED = 'export PATH=/opt/miniconda3/envs/testbed/bin:$PATH';

const SHAPE: PublishedShape<typeof SweRebenchRow> = {
  dataset: 'SWE-rebench',
  schema: SweRebenchRow,
  unused: UNUSED,
};

export function mapSweRebenchRow(
  value: unknown,
  at: RowLocation,
  _options: DatasetOptions,
  unknown: UnknownFields,
): Record<string, unknown> {
  const row = parsePublishedRow(SHAPE, value, at, unknown);
  const config = row.install_config;
  const known = new Set([...Object.keys(InstallConfig.shape), ...INSTALL_UNUSED]);
  for (const key of Object.keys(config)) {
    if (!known.has(key)) unknown.add(SHAPE.dataset, `install_config.${key}`, at);
  }
  const parser = logParserOf(config.log_parser);
  if (parser === undefined) {
    throw loadError(
      `task ${row.instance_id}: install_config.log_parser: "${config.log_parser}" has no parser here (known: ${knownParserNames().join(', ')})`,
      at,
    );
  }
  const [image, workdir] =
    row.image_name !== undefined
      ? [row.image_name, `/${row.repo.split('/')[1] ?? ''}`]
      : [row.docker_image, '/testbed'];
  if (image === undefined) {
    throw loadError(`task ${row.instance_id}: image_name: the row names no image (image_name or docker_image)`, at);
  }
  const commands = typeof config.test_cmd === 'string' ? [config.test_cmd] : [...config.test_cmd];
  if (row.image_name === undefined) {
    const files = patchFiles(row.test_patch).map(shellQuote);
    commands.push(`${commands.pop() ?? ''} ${files.join(' ')}`.trimEnd());
    commands.unshift(V1_TESTBED);
  }
  return {
    ...sweBenchCore(row),
    workspace: { kind: 'image', path: workdir },
    environment: { image },
    // Each command runs, as the harness's eval script runs them one per line; the parser reads all output.
    test_command: commands.join('\n'),
    log_parser: parser,
  };
}
