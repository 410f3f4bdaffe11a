/**
 * Harbor task folders (harbor-framework/harbor, the format of Terminal-Bench 2; task.toml schema
 * 1.x): `task.toml`, `instruction.md` (the prompt), `tests/test.sh` (the verifier, which writes
 * the reward to /logs/verifier/reward.txt), `environment/Dockerfile` or `[environment]
 * docker_image`, and optionally `solution/solve.sh`. The task runs in its prebuilt image with
 * its working directory as the workspace; the reward is a `script` reward over the task's
 * tests/ folder, its wall time `[verifier] timeout_sec`. A verifier that writes only
 * /logs/verifier/reward.json (Harbor's named rewards) is not read: the reward reads reward.txt.
 * The agent's limits come from the batch, not `[agent]`. A task with only a Dockerfile cannot run
 * here (no Docker builds): the error says to build and push it and name it in `docker_image`.
 */
import { readdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { z } from 'zod';
import { errorMessage, loadError, type RowLocation } from '../load-error.js';
import type { DatasetOptions } from './options.js';
import { shellQuote } from './published.js';
import { readText } from './rows.js';
import type { UnknownFields } from './report.js';

const DATASET = 'Harbor';

/** Harbor's verifier timeout when task.toml gives none. */
const DEFAULT_VERIFIER_TIMEOUT_S = 600;

const Verifier = z.looseObject({
  timeout_sec: z.number().positive().optional(),
  env: z.record(z.string(), z.string()).optional(),
});

const Environment = z.looseObject({
  docker_image: z.string().min(1).optional(),
});

const TaskToml = z.looseObject({
  task: z.looseObject({ name: z.string().min(1).optional() }).optional(),
  verifier: Verifier.optional(),
  environment: Environment.optional(),
});

/** Published keys that map onto nothing of ours (resources, the agent's own limits, metadata). */
const UNUSED: Record<string, readonly string[]> = {
  '': ['version', 'schema_version', 'metadata', 'agent', 'solution', 'source', 'steps'],
  task: ['description', 'authors', 'keywords'],
  verifier: ['user', 'environment'],
  environment: [
    'build_timeout_sec',
    'cpus',
    'memory_mb',
    'storage_mb',
    'gpus',
    'gpu_types',
    'tpu',
    'allow_internet',
    'os',
  ],
};

/** Whether `dir` is a Harbor task folder. */
async function isHarborTask(dir: string): Promise<boolean> {
  return isFile(join(dir, 'task.toml'));
}

/** The task folders of `dir`: itself when it is one, else its subfolders that are, by name. */
export async function harborTaskDirs(dir: string): Promise<string[]> {
  if (await isHarborTask(dir)) return [dir];
  const entries = await readdir(dir, { withFileTypes: true });
  const dirs = entries
    .filter((e) => e.isDirectory())
    .map((e) => join(dir, e.name))
    .sort();
  const found: string[] = [];
  for (const d of dirs) if (await isHarborTask(d)) found.push(d);
  return found;
}

export async function mapHarborTask(
  dir: string,
  options: DatasetOptions,
  unknown: UnknownFields,
): Promise<Record<string, unknown>> {
  const file = join(dir, 'task.toml');
  const at: RowLocation = { file };
  let raw: unknown;
  try {
    raw = parseToml(await readText(file));
  } catch (err) {
    throw loadError(`malformed TOML: ${errorMessage(err)}`, at);
  }
  const parsed = TaskToml.safeParse(raw);
  if (!parsed.success) throw loadError(`invalid task.toml:\n${z.prettifyError(parsed.error)}`, at);
  reportUnknown(raw as Record<string, unknown>, at, unknown);
  const config = parsed.data;
  const id = basename(dir);
  const image = config.environment?.docker_image;
  if (image === undefined) {
    const dockerfile = join(dir, 'environment', 'Dockerfile');
    throw loadError(
      (await isFile(dockerfile))
        ? `task ${id}: environment.docker_image: the task has only ${dockerfile}, and Docker builds do not run here; build and push it (docker build -t REGISTRY/${id}:TAG ${join(dir, 'environment')} && docker push REGISTRY/${id}:TAG), then set docker_image = "REGISTRY/${id}:TAG" under [environment]`
        : `task ${id}: environment.docker_image: the task names no image and has no environment/Dockerfile`,
      at,
    );
  }
  const tests = join(dir, 'tests');
  if (!(await isFile(join(tests, 'test.sh')))) {
    throw loadError(`task ${id}: tests/test.sh: the verifier script ${join(tests, 'test.sh')} does not exist`, at);
  }
  const env = Object.entries(config.verifier?.env ?? {}).map(([k, v]) => `${k}=${shellQuote(v)}`);
  return {
    instance_id: id,
    repo: config.task?.name ?? id,
    problem_statement: await readText(join(dir, 'instruction.md')),
    workspace: { kind: 'image', path: options.harborWorkdir ?? '/app' },
    environment: { image },
    reward: {
      kind: 'script',
      dir: tests,
      command: [...(env.length > 0 ? ['env', ...env] : []), 'bash', '/tests/test.sh'].join(' '),
      reward_file: '/logs/verifier/reward.txt',
    },
    timeouts: { test_s: config.verifier?.timeout_sec ?? DEFAULT_VERIFIER_TIMEOUT_S },
  };
}

function reportUnknown(raw: Record<string, unknown>, at: RowLocation, unknown: UnknownFields): void {
  const read: Record<string, readonly string[]> = {
    '': Object.keys(TaskToml.shape),
    task: ['name'],
    verifier: Object.keys(Verifier.shape),
    environment: Object.keys(Environment.shape),
  };
  for (const [section, keys] of Object.entries(read)) {
    const table = section === '' ? raw : raw[section];
    if (typeof table !== 'object' || table === null) continue;
    const known = new Set([...keys, ...(UNUSED[section] ?? [])]);
    for (const key of Object.keys(table)) {
      if (!known.has(key)) unknown.add(DATASET, section === '' ? key : `${section}.${key}`, at);
    }
  }
}

async function isFile(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isFile() ?? false;
}
