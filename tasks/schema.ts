import { z } from 'zod';

/** SWE-bench stores test lists either as arrays or as JSON-encoded strings; accept both. */
const TestList = z.preprocess((v) => {
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
 * repository of the files at `base_commit` (tasks/workspace.ts).
 */
export const WorkspaceSchema = z.discriminatedUnion('kind', [
  /** A directory on the worker host holding the files at the base commit. */
  z.object({ kind: z.literal('dir'), path: z.string().min(1) }),
  /** A git bundle (`git bundle create x.bundle --all`); the task's `base_commit` is checked out. */
  z.object({ kind: z.literal('git-bundle'), path: z.string().min(1) }),
  /** A `.tar`, `.tar.gz` or `.tgz` archive of the files at the base commit. */
  z.object({
    kind: z.literal('tarball'),
    path: z.string().min(1),
    /** Leading path components dropped from every member, as `tar --strip-components`. Default 0. */
    strip_components: z.number().int().min(0).default(0),
  }),
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
 * One task: SWE-bench fields plus ours (`workspace`, `setup`, `test_command`, `test_framework`,
 * `timeouts`). `patch` is the gold fix and is never shown to the agent; `test_patch` holds the
 * hidden tests, applied only in the reward sandbox.
 */
export const TaskSchema = z
  .object({
    instance_id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'letters, digits, . _ - only'),
    repo: z.string().min(1),
    base_commit: z.string().default('base'),
    problem_statement: z.string().min(1),
    patch: z.string().min(1),
    test_patch: z.string().min(1),
    FAIL_TO_PASS: TestList.refine((l) => l.length > 0, 'FAIL_TO_PASS must name at least one test'),
    PASS_TO_PASS: TestList.default([]),
    workspace: WorkspaceSchema,
    setup: z.array(z.string()).default([]),
    /**
     * Shell command run in /workspace that writes the runner's report to `$REWARD_REPORT`.
     * Default: the framework's runner over the whole suite, or for mocha and jest over the hidden
     * test files, `$REWARD_TEST_FILES` (tasks/reward/runners.ts). It must run the files of
     * `test_patch` whole, since the reward appends its canary tests to them.
     */
    test_command: z.string().optional(),
    test_framework: TestFrameworkSchema,
    timeouts: z
      .object({
        /** Wall time for one test run in the reward sandbox. Default 60 s. */
        test_s: z.number().positive().default(60),
      })
      .default({ test_s: 60 }),
  })
  .superRefine((task, ctx) => {
    if (task.workspace.kind === 'git-bundle' && !/^[0-9a-f]{7,64}$/.test(task.base_commit)) {
      ctx.addIssue({
        code: 'custom',
        path: ['base_commit'],
        message: 'a git-bundle workspace needs base_commit: the hash of the commit to check out',
      });
    }
  });
export type Task = z.infer<typeof TaskSchema>;
