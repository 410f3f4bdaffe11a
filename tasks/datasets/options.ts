import type { LogParser } from '../schema.js';

/** Options of the published-dataset loaders. */
export interface DatasetOptions {
  /**
   * SWE-bench and SWE-Gym: the test command for rows whose repository is not in the built-in
   * table (tasks/datasets/repo-tests.ts), or to replace the table's. Default: the table's.
   */
  testCmd?: string;
  /** With `testCmd`: how its output is parsed. Default: the table's parser for the repository. */
  logParser?: LogParser;
  /** SWE-bench: the image namespace, as the harness's `--namespace`. Default `swebench`. */
  namespace?: string;
  /** Harbor: the task's working directory inside its image (its Dockerfile's WORKDIR). Default `/app`. */
  harborWorkdir?: string;
}
