/**
 * How the tests of a SWE-bench or SWE-Gym repository run in its published image. The harness
 * keeps a spec per repository and version (swebench/harness/constants), too big to carry; this is
 * our documented default instead: every repository below runs pytest, so the reward runs
 * `pytest -rA` over the files of the row's test_patch, in the images' conda env `testbed`
 * (/opt/miniconda3/envs/testbed, where the harness installs the repository). Repositories with
 * runners of their own (django's runtests.py, sympy's bin/test) are not here: their rows need the
 * loader's `testCmd` and `logParser` options.
 */
import type { LogParser } from '../schema.js';
import { shellQuote } from './published.js';

/** SWE-bench (test split) repositories whose harness spec runs pytest. */
const SWE_BENCH_PYTEST = [
  'astropy/astropy',
  'matplotlib/matplotlib',
  'mwaskom/seaborn',
  'pallets/flask',
  'psf/requests',
  'pydata/xarray',
  'pylint-dev/pylint',
  'pytest-dev/pytest',
  'scikit-learn/scikit-learn',
  'sphinx-doc/sphinx',
  'pvlib/pvlib-python',
  'pydicom/pydicom',
  'sqlfluff/sqlfluff',
  'marshmallow-code/marshmallow',
  'pyvista/pyvista',
  'pylint-dev/astroid',
];

/** SWE-Gym repositories; all run pytest in SWE-Gym's images. */
export const SWE_GYM_REPOS = [
  'pandas-dev/pandas',
  'pydantic/pydantic',
  'python/mypy',
  'getmoto/moto',
  'iterative/dvc',
  'dask/dask',
  'conan-io/conan',
  'Project-MONAI/MONAI',
  'facebookresearch/hydra',
  'modin-project/modin',
  'bokeh/bokeh',
];

const PYTEST_REPOS = new Set([...SWE_BENCH_PYTEST, ...SWE_GYM_REPOS]);

const TESTBED_PATH = 'export PATH=/opt/miniconda3/envs/testbed/bin:$PATH';

export interface RepoTests {
  test_command: string;
  log_parser: LogParser;
}

/** The default test command and parser of `repo` over `testFiles`, or undefined when it has none. */
export function repoTests(repo: string, testFiles: string[]): RepoTests | undefined {
  if (!PYTEST_REPOS.has(repo)) return undefined;
  const files = testFiles.map(shellQuote).join(' ');
  return { test_command: `${TESTBED_PATH} && pytest -rA ${files}`.trimEnd(), log_parser: 'pytest' };
}
