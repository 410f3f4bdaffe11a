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

/** Where the repository snapshot the agent starts from comes from. */
export const WorkspaceSchema = z.discriminatedUnion('kind', [
  /** A directory on the worker host; relative paths are resolved against the task file. */
  z.object({ kind: z.literal('dir'), path: z.string().min(1) }),
]);

/** Test runners whose machine-readable reports the reward parses. */
export const TestFrameworkSchema = z.enum(['unittest', 'node-test']);
export type TestFramework = z.infer<typeof TestFrameworkSchema>;

/**
 * One task: SWE-bench fields plus ours (`workspace`, `setup`, `test_command`, `test_framework`,
 * `timeouts`). `patch` is the gold fix and is never shown to the agent; `test_patch` holds the
 * hidden tests, applied only in the reward sandbox.
 */
export const TaskSchema = z.object({
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
  /** Shell command run in /workspace that writes the runner's report (see tasks/reward). */
  test_command: z.string().optional(),
  test_framework: TestFrameworkSchema,
  timeouts: z
    .object({
      /** Wall time for one test run in the reward sandbox. Default 60 s. */
      test_s: z.number().positive().default(60),
    })
    .default({ test_s: 60 }),
});
export type Task = z.infer<typeof TaskSchema>;
