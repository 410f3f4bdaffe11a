/**
 * The on-disk cache of suite baselines (suite-baseline.ts): one JSON file per task and key, the
 * key a hash of everything that decides which tests pass. A cache is derived state: a file that
 * does not parse, fails the schema or holds another key is recomputed, never trusted.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import type { SandboxSpec } from '../../sandbox/provider.js';
import type { Task } from '../schema.js';
import { defaultTestCommand } from './runners.js';

/**
 * Bumped when what a baseline holds or how its runs are made changes in a way the key's other
 * parts do not show (runner scripts, report parsing, the steps of a run).
 */
const BASELINE_FORMAT = 1;

/** A task's baseline: the tests to check, or why there are none. */
export interface SuiteBaseline {
  /** Ids of the tests that passed in every baseline run, sorted. */
  tests: string[];
  /** Why a run gave no tests (`gold run: timeout`), so `tests` is empty. */
  skipped?: string;
}

const CacheFileSchema = z
  .object({
    format: z.literal(BASELINE_FORMAT),
    key: z.string().regex(/^[0-9a-f]{64}$/),
    instance_id: z.string(),
    tests: z.array(z.string()),
    skipped: z.string().optional(),
  })
  .strict();

/**
 * The hash of what decides a task's baseline: the task's id, image (its digest where known),
 * workspace content key, patches, setup, test command (the framework's default command when it
 * has none), runner, log parser, hidden paths and time limit.
 */
export function baselineKey(
  task: Task,
  image: string,
  spec: Pick<SandboxSpec, 'workspaceKey' | 'workspaceDir' | 'workspaceLink'>,
): string {
  const framework = task.test_framework;
  const parts = {
    format: BASELINE_FORMAT,
    instance_id: task.instance_id,
    image,
    workspace: spec.workspaceKey ?? spec.workspaceDir ?? null,
    workspaceLink: spec.workspaceLink ?? null,
    hidden_paths: task.environment.hidden_paths,
    test_patch: task.test_patch,
    patch: task.patch,
    setup: task.setup,
    test_command: task.test_command ?? (framework ? defaultTestCommand(framework, []) : null),
    test_framework: framework ?? null,
    log_parser: task.log_parser ?? null,
    test_s: task.timeouts.test_s,
  };
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

/** The cache file of a task's baseline under `dir`. */
export function baselineFile(dir: string, instanceId: string, key: string): string {
  return join(dir, `${instanceId}-${key.slice(0, 32)}.json`);
}

/** The cached baseline in `file` for `key`; undefined when absent, unreadable or not for `key`. */
export async function readBaseline(file: string, key: string): Promise<SuiteBaseline | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = CacheFileSchema.safeParse(json);
  if (!parsed.success || parsed.data.key !== key) return undefined;
  const { tests, skipped } = parsed.data;
  return skipped === undefined ? { tests } : { tests, skipped };
}

/** Writes the baseline to `file` whole or not at all (a temporary file, then rename). */
export async function writeBaseline(
  file: string,
  key: string,
  instanceId: string,
  baseline: SuiteBaseline,
): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const record = { format: BASELINE_FORMAT, key, instance_id: instanceId, ...baseline };
  try {
    await writeFile(tmp, JSON.stringify(record));
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}
