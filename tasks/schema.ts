import { z } from 'zod';
import { ScreenConfigSchema } from './reward/screen/config.js';

/** SWE-bench stores test lists either as arrays or as JSON-encoded strings; accept both. */
export const TestList = z.preprocess((v) => {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
}, z.array(z.string()));

/**
 * Where the repository snapshot the agent starts from comes from; relative paths are resolved
 * against the task file's folder. Whatever the source, the sandbox sees a fresh single-commit
 * repository of the files at `base_commit` at `/workspace` (tasks/workspace.ts).
 */
export const WorkspaceSchema = z.discriminatedUnion('kind', [
  /** A directory on the worker host holding the files at the base commit. */
  z.object({ kind: z.literal('dir'), path: z.string().min(1) }).strict(),
  /** A git bundle (`git bundle create x.bundle --all`); the task's `base_commit` is checked out. */
  z.object({ kind: z.literal('git-bundle'), path: z.string().min(1) }).strict(),
  /** A `.tar`, `.tar.gz` or `.tgz` archive of the files at the base commit. */
  z
    .object({
      kind: z.literal('tarball'),
      path: z.string().min(1),
      /** Leading path components dropped from every member, as `tar --strip-components`. Default 0. */
      strip_components: z.number().int().min(0).default(0),
    })
    .strict(),
  /**
   * The repository inside the task's image (`environment.image`), e.g. `/testbed` in SWE-bench
   * images. Its files become the sandbox's `/workspace` (history dropped) and `path` is a symlink
   * to `/workspace`, so paths the image was built with (editable installs) still resolve.
   */
  z
    .object({
      kind: z.literal('image'),
      path: z
        .string()
        .regex(/^\/[^\0]*[^/]$/, 'an absolute path inside the image')
        .refine((p) => !p.split('/').includes('..'), 'no .. components'),
    })
    .strict(),
]);
export type Workspace = z.infer<typeof WorkspaceSchema>;

/**
 * Test runners whose machine-readable reports the reward parses and that run for real in the
 * sandbox: pytest (JUnit XML), unittest (runners/unittest_json.py), vitest (JSON reporter),
 * node:test (JUnit reporter), mocha (JSON reporter) and jest (`--json`). Test ids per runner are
 * described in tasks/reward/report.ts.
 */
export const TestFrameworkSchema = z.enum([
  'pytest',
  'unittest',
  'vitest',
  'node-test',
  'mocha',
  'jest',
]);
export type TestFramework = z.infer<typeof TestFrameworkSchema>;

/**
 * Parsers of a test command's console output, as SWE-bench-style harnesses read it: for a task
 * that runs its repository's own pinned runner (`test_command`) inside its image. Test ids per
 * parser are described in tasks/reward/log-parsers/.
 */
export const LogParserSchema = z.enum([
  'pytest',
  'unittest',
  'jest',
  'vitest',
  'mocha',
  'tap',
  'go-test',
  'cargo-test',
]);
export type LogParser = z.infer<typeof LogParserSchema>;

/**
 * The reference to an OCI image, as skopeo takes it: `docker://host[:port]/name[:tag|@digest]`,
 * `oci:<layout dir>[:tag]` or `oci-archive:<file>[:tag]`. A bare `name[:tag]` (how datasets write
 * them) means `docker://`. Checked for form at load; pulled on first use (sandbox/images/).
 */
export const ImageReferenceSchema = z
  .string()
  .min(1)
  .max(1024)
  .regex(
    /^(?:(?:docker:\/\/)?[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9._-]{0,127})?(?:@sha256:[0-9a-f]{64})?|oci(?:-archive)?:[^\0\s]+)$/,
    'an OCI image reference: docker://registry/name:tag, name:tag, oci:<dir>[:tag] or oci-archive:<file>[:tag]',
  );

/** An absolute, normalised path inside an image. */
const ImagePathSchema = z
  .string()
  .regex(/^\/[^\0]*[^/]$/, 'an absolute path inside the image')
  .refine(
    (p) =>
      !p
        .split('/')
        .slice(1)
        .some((part) => part === '..' || part === '.' || part === ''),
    'a normalised path (no ., .. or //)',
  );

/** Where the sandbox's root file system comes from. */
export const EnvironmentSchema = z
  .object({
    /** The task's own OCI image. Default: the base image `scripts/setup.sh` builds. */
    image: ImageReferenceSchema.optional(),
    /**
     * Absolute paths in the image that the agent must never see but the reward needs, such as
     * tests baked into the image (R2E-Gym's `/r2e_tests`). Outside an image workspace's path
     * they are whited out of the agent's root; inside it they are left out of the agent's
     * workspace copy, and the agent's diff may not touch them. The reward sandbox sees them all.
     * Default none.
     */
    hidden_paths: z.array(ImagePathSchema).default([]),
  })
  .strict();
export type Environment = z.infer<typeof EnvironmentSchema>;

/** What a judge is shown of the episode, each quoted as data (tasks/reward/judge/prompt.ts). */
export const JudgeIncludeSchema = z.enum(['problem', 'diff', 'transcript']);
export type JudgeInclude = z.infer<typeof JudgeIncludeSchema>;

/** Options every model judge takes, the task's reward judge and the audit alike. */
const judgeCallOptions = {
  /** The judge's model: must be the one the configured engines serve. Default that model (`model.name`). */
  model: z.string().min(1).optional(),
  /** Output tokens of one judge call (reasoning included). Default 512. */
  max_tokens: z.number().int().min(16).max(8192).default(512),
  /** Sampling temperature. Default 0 (greedy), so a verdict can be reproduced. */
  temperature: z.number().min(0).max(2).default(0),
  /**
   * Bytes of each quoted input (problem, diff, transcript) the judge sees; a longer one keeps its
   * head and tail and says how much was left out. Default 16,000.
   */
  input_bytes: z.number().int().min(1000).max(200_000).default(16_000),
};

/** The longest rubric: it is sent whole in every judge prompt. */
export const MAX_RUBRIC_CHARS = 8000;

/**
 * An audit beside a `tests` or `script` reward: a model judge reads the episode's transcript and
 * diff and flags test tampering, peeking at history and reading hidden files
 * (tasks/reward/judge/audit.ts). With `action: 'zero'` (default) a flag makes the reward 0 with
 * reason `tampered` and the judge's reason as `detail`; with `flag` the reward stands and the
 * verdict is only recorded. Default rubric: AUDIT_RUBRIC (tasks/reward/judge/prompt.ts).
 */
export const AuditSpecSchema = z
  .object({
    rubric: z.string().min(1).max(MAX_RUBRIC_CHARS).optional(),
    include: z.array(JudgeIncludeSchema).min(1).default(['problem', 'diff', 'transcript']),
    action: z.enum(['zero', 'flag']).default('zero'),
    ...judgeCallOptions,
  })
  .strict();
export type AuditSpec = z.infer<typeof AuditSpecSchema>;

/**
 * How the episode is scored. `tests` (default): the hidden tests of `test_patch` over the agent's
 * diff, FAIL_TO_PASS and PASS_TO_PASS read from the runner's report or log. `script`: a verifier
 * folder (Harbor's `tests/`) mounted read-only at `/tests` in the reward sandbox runs `command`,
 * which writes the reward (a number in [0, 1]) to `reward_file`. `judge`: a model judge, through
 * the configured engines, scores the episode by `rubric` (tasks/reward/judge-reward.ts); for tasks
 * without tests. `tests` and `script` take an `audit` (AuditSpecSchema).
 */
export const RewardSpecSchema = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('tests'),
      /**
       * The static screen of the agent's diff before the tests run (tasks/reward/screen/): on,
       * every rule applied, where left out. Applies together with the stack's `reward.screen`.
       */
      screen: ScreenConfigSchema.optional(),
      audit: AuditSpecSchema.optional(),
    })
    .strict(),
  z
    .object({
      kind: z.literal('script'),
      /** Host folder holding the verifier (mounted read-only at /tests). */
      dir: z.string().min(1),
      /** Shell command run in /workspace. Default `bash /tests/test.sh`. */
      command: z.string().min(1).default('bash /tests/test.sh'),
      /** Where the command leaves the reward. Default `/logs/verifier/reward.txt`. */
      reward_file: z
        .string()
        .regex(/^\/\S+$/)
        .default('/logs/verifier/reward.txt'),
      audit: AuditSpecSchema.optional(),
    })
    .strict(),
  z
    .object({
      kind: z.literal('judge'),
      /** What earns the reward, in plain words; the judge is told how to answer. */
      rubric: z.string().min(1).max(MAX_RUBRIC_CHARS),
      /** `binary`: the reward is 0 or 1; `scale`: any number in [0, 1]. Default `binary`. */
      score: z.enum(['binary', 'scale']).default('binary'),
      /** Default all three: problem, diff and transcript. */
      include: z.array(JudgeIncludeSchema).min(1).default(['problem', 'diff', 'transcript']),
      ...judgeCallOptions,
    })
    .strict(),
]);
export type RewardSpec = z.infer<typeof RewardSpecSchema>;

/**
 * One task: SWE-bench fields plus ours (`workspace`, `environment`, `setup`, `test_command`,
 * `test_framework` or `log_parser`, `reward`, `timeouts`). `patch` is the gold fix and is never
 * shown to the agent; `test_patch` holds the hidden tests, applied only in the reward sandbox.
 * Unknown keys are errors: a misspelt field must not silently take its default.
 */
export const TaskSchema = z
  .object({
    instance_id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'letters, digits, . _ - only'),
    repo: z.string().min(1),
    base_commit: z.string().default('base'),
    problem_statement: z.string().min(1),
    /** The gold fix; required for `tests` rewards unless `environment.hidden_paths` is set. */
    patch: z.string().default(''),
    /** The hidden tests; required for `tests` rewards unless `environment.hidden_paths` holds them. */
    test_patch: z.string().default(''),
    FAIL_TO_PASS: TestList.default([]),
    PASS_TO_PASS: TestList.default([]),
    workspace: WorkspaceSchema,
    environment: EnvironmentSchema.default({ hidden_paths: [] }),
    setup: z.array(z.string()).default([]),
    /**
     * Shell command run in /workspace. With `test_framework` it writes the runner's report to
     * `$REWARD_REPORT` and streams each result with the reward's reporter, as the default does
     * (the framework's runner over the repository's whole suite, `defaultTestCommand` in
     * tasks/reward/runners.ts); it must run the files of `test_patch` whole, since the reward
     * appends its canary tests to them. With `log_parser` it is required: its stdout and stderr
     * together are read by the parser (tasks/reward/log-parsers/), so it must print per-test
     * lines (pytest `-rA`, unittest `-v`, jest `--verbose`, vitest `--reporter=verbose`, `go test
     * -v`). Nothing in its environment names the hidden test files.
     */
    test_command: z.string().min(1).optional(),
    test_framework: TestFrameworkSchema.optional(),
    log_parser: LogParserSchema.optional(),
    reward: RewardSpecSchema.default({ kind: 'tests' }),
    timeouts: z
      .object({
        /** Wall time for one test run in the reward sandbox. Default 60 s. */
        test_s: z.number().positive().default(60),
      })
      .strict()
      .default({ test_s: 60 }),
  })
  .strict()
  .superRefine((task, ctx) => {
    const issue = (path: string, message: string): void =>
      ctx.addIssue({ code: 'custom', path: [path], message });
    if (task.workspace.kind === 'git-bundle' && !/^[0-9a-f]{7,64}$/.test(task.base_commit)) {
      issue(
        'base_commit',
        'a git-bundle workspace needs base_commit: the hash of the commit to check out',
      );
    }
    if (task.workspace.kind === 'image' && task.environment.image === undefined) {
      issue('environment', 'an image workspace needs environment.image');
    }
    if (task.environment.hidden_paths.length > 0 && task.workspace.kind !== 'image') {
      issue('environment', 'environment.hidden_paths needs an image workspace');
    }
    if (task.workspace.kind === 'image') {
      const root = task.workspace.path;
      for (const path of task.environment.hidden_paths) {
        if (root === path || root.startsWith(`${path}/`))
          issue(
            'environment',
            `environment.hidden_paths: ${path} would hide the whole workspace ${root}`,
          );
      }
    }
    if (task.reward.kind === 'tests') {
      // R2E-Gym publishes no exact gold diff (tasks/datasets/r2e-gym.ts): tasks with hidden tests may lack one.
      if (task.patch === '' && task.environment.hidden_paths.length === 0)
        issue('patch', 'a tests reward needs the gold patch');
      // Tests hidden in the image (environment.hidden_paths) stand in for a test patch.
      if (task.test_patch === '' && task.environment.hidden_paths.length === 0)
        issue(
          'test_patch',
          'a tests reward needs the hidden test patch, or tests in environment.hidden_paths',
        );
      if (task.FAIL_TO_PASS.length === 0)
        issue('FAIL_TO_PASS', 'FAIL_TO_PASS must name at least one test');
      if ((task.test_framework === undefined) === (task.log_parser === undefined)) {
        issue(
          'test_framework',
          'give exactly one of test_framework (a report) or log_parser (console output)',
        );
      }
      if (task.log_parser !== undefined && task.test_command === undefined) {
        issue('test_command', 'a log_parser task needs its test_command');
      }
    }
  });
export type Task = z.infer<typeof TaskSchema>;
