import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkTasks } from '../../../tasks/datasets/checks.js';
import { loadTaskReport, loadTasks, parseTaskSource, TaskLoadError } from '../../../tasks/loader.js';

let root = '';

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'datasets-'));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const GOLD = 'diff --git a/src/m.py b/src/m.py\n--- a/src/m.py\n+++ b/src/m.py\n@@ -1 +1 @@\n-bug\n+fix\n';
const TESTS =
  'diff --git a/tests/test_m.py b/tests/test_m.py\n--- a/tests/test_m.py\n+++ b/tests/test_m.py\n@@ -1 +1,2 @@\n x\n+y\n' +
  'diff --git a/tests/test_n.py b/tests/test_n.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_n.py\n@@ -0,0 +1 @@\n+z\n';

/** A SWE-bench Verified row as published on the hub (list fields as JSON strings). */
function sweBenchRow(id: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    repo: 'astropy/astropy',
    instance_id: id,
    base_commit: 'd16bfe05a744909de4b27f5875fe0d4ed41ce607',
    patch: GOLD,
    test_patch: TESTS,
    problem_statement: 'Modeling separability is wrong for nested models',
    hints_text: '',
    created_at: '2022-03-03T15:14:54Z',
    version: '4.3',
    FAIL_TO_PASS: '["tests/test_m.py::test_nested[compound_model6]"]',
    PASS_TO_PASS: '["tests/test_m.py::test_plain"]',
    environment_setup_commit: '298ccb478e6bf092953bca67a3d29dc6c35f6752',
    difficulty: '15 min - 1 hour',
    ...overrides,
  };
}

async function write(name: string, rows: unknown[], jsonl = true): Promise<string> {
  const file = join(root, name);
  await writeFile(file, jsonl ? rows.map((r) => JSON.stringify(r)).join('\n') + '\n' : JSON.stringify(rows));
  return file;
}

async function loadError(load: Promise<unknown>): Promise<TaskLoadError> {
  const err: unknown = await load.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TaskLoadError);
  return err as TaskLoadError;
}

describe('SWE-bench rows', () => {
  it('load as published: the harness image, /testbed, pytest over the test files', async () => {
    const file = await write('verified.jsonl', [sweBenchRow('astropy__astropy-12907')]);
    const warnings: string[] = [];
    const report = await loadTaskReport(file, { warn: (w) => warnings.push(w) });
    expect(report.format).toBe('swe-bench');
    expect(report.detected).toBe(true);
    expect(warnings).toEqual([]);
    const [loaded] = report.tasks;
    expect(loaded?.at).toEqual({ file, line: 1 });
    const task = loaded?.task;
    expect(task?.environment.image).toBe('swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest');
    expect(task?.workspace).toEqual({ kind: 'image', path: '/testbed' });
    expect(task?.FAIL_TO_PASS).toEqual(['tests/test_m.py::test_nested[compound_model6]']);
    expect(task?.log_parser).toBe('pytest');
    expect(task?.test_command).toBe(
      'export PATH=/opt/miniconda3/envs/testbed/bin:$PATH && pytest -rA tests/test_m.py tests/test_n.py',
    );
    expect(task?.reward).toEqual({ kind: 'tests' });
  });

  it('takes list fields as lists, and a namespace for the images', async () => {
    const row = sweBenchRow('astropy__astropy-1', { FAIL_TO_PASS: ['tests/test_m.py::test_a'], PASS_TO_PASS: [] });
    const [task] = await loadTasks(await write('lists.json', [row], false), { namespace: 'mirror.local:5000/sweb' });
    expect(task?.FAIL_TO_PASS).toEqual(['tests/test_m.py::test_a']);
    expect(task?.environment.image).toBe('mirror.local:5000/sweb/sweb.eval.x86_64.astropy_1776_astropy-1:latest');
  });

  it('names the row and the repo of a repository without a default runner, and takes overrides', async () => {
    const rows = [sweBenchRow('astropy__astropy-2'), sweBenchRow('django__django-11099', { repo: 'django/django' })];
    const file = await write('django.jsonl', rows);
    const err = await loadError(loadTasks(file, { warn: () => undefined }));
    expect(err.line).toBe(2);
    expect(err.message).toContain(`${file}:2: task django__django-11099: repo: no default test command for django/django`);
    const tasks = await loadTasks(file, { testCmd: './tests/runtests.py --verbosity 2', logParser: 'unittest' });
    expect(tasks[1]?.test_command).toBe('./tests/runtests.py --verbosity 2');
    expect(tasks[1]?.log_parser).toBe('unittest');
  });

  it('read a 5.x row (SWE-bench Multilingual): its own image and log parser, with a test command given', async () => {
    const row = sweBenchRow('burntsushi__ripgrep-2209', {
      repo: 'BurntSushi/ripgrep',
      image: 'swebench/sweb.eval.x86_64.burntsushi_1776_ripgrep-2209:latest',
      log_parser: 'parse_log_cargo',
      eval_script: '#!/bin/bash\ncargo test',
      eval_type: 'pass_and_fail',
      FAIL_TO_PASS: ['regression::r2209'],
      PASS_TO_PASS: [],
    });
    const file = await write('multilingual.jsonl', [row]);
    const err = await loadError(loadTasks(file));
    expect(err.message).toContain('task burntsushi__ripgrep-2209: repo: no default test command for BurntSushi/ripgrep');
    const [task] = await loadTasks(file, { testCmd: 'cargo test --no-fail-fast' });
    expect(task?.environment.image).toBe('swebench/sweb.eval.x86_64.burntsushi_1776_ripgrep-2209:latest');
    expect(task?.log_parser).toBe('cargo-test');
    expect(task?.test_command).toBe('cargo test --no-fail-fast');
  });

  it('names the row and field of a broken row', async () => {
    const file = await write('broken.json', [sweBenchRow('astropy__astropy-3'), sweBenchRow('astropy__astropy-4', { base_commit: 7 })], false);
    const err = await loadError(loadTasks(file));
    expect(err.row).toBe(1);
    expect(err.message).toContain(`${file} [row 1]: invalid SWE-bench row astropy__astropy-4`);
    expect(err.message).toContain('→ at base_commit');
  });

  it('warns once per unknown field with the rows it was in, and never drops one silently', async () => {
    const rows = [1, 2, 3].map((i) => sweBenchRow(`astropy__astropy-1${i}`, { reviewer: 'x' }));
    const warnings: string[] = [];
    const report = await loadTaskReport(await write('extra.jsonl', rows), { warn: (w) => warnings.push(w) });
    expect(warnings).toEqual([expect.stringMatching(/extra\.jsonl:1: unknown SWE-bench field "reviewer" ignored \(in 3 rows\)$/)]);
    expect(report.warnings).toEqual(warnings);
  });
});

describe('thousands of rows', () => {
  it('load and pass their checks in seconds', async () => {
    const rows = Array.from({ length: 5000 }, (_, i) => sweBenchRow(`astropy__astropy-${i}`));
    const file = await write('many.jsonl', rows);
    const started = Date.now();
    const report = await loadTaskReport(file);
    expect(await checkTasks(report.tasks)).toEqual([]);
    expect(report.tasks).toHaveLength(5000);
    // About half a second on an idle machine; the bound leaves room for a loaded one.
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});

describe('SWE-Gym rows', () => {
  it('are detected by their repositories and named as OpenHands names their images', async () => {
    const row = sweBenchRow('Project-MONAI__MONAI-3715', { repo: 'Project-MONAI/MONAI' });
    const report = await loadTaskReport(await write('gym.jsonl', [row]));
    expect(report.format).toBe('swe-gym');
    expect(report.tasks[0]?.task.environment.image).toBe('xingyaoww/sweb.eval.x86_64.project-monai_s_monai-3715:latest');
    expect(report.tasks[0]?.task.log_parser).toBe('pytest');
  });

  it('can be asked for by prefix, and a wrong field names the row', async () => {
    const file = await write('gym-bad.jsonl', [sweBenchRow('pandas-dev__pandas-1', { repo: 'pandas-dev/pandas', FAIL_TO_PASS: '{"a": 1}' })]);
    expect(parseTaskSource(`swe-gym:${file}`)).toEqual({ format: 'swe-gym', path: file });
    const err = await loadError(loadTasks(`swe-gym:${file}`));
    expect(err.message).toContain(`${file}:1: invalid SWE-Gym row pandas-dev__pandas-1`);
    expect(err.message).toContain('→ at FAIL_TO_PASS');
  });
});

/** A SWE-rebench V2 row as published (nebius/SWE-rebench-V2). */
function rebenchRow(id: string, install: Record<string, unknown> = {}, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    instance_id: id,
    repo: 'wtforms/wtforms',
    base_commit: '848d28d67e45f6e2bd4ba6ac7c5ae8b2a1b8b1f3',
    patch: GOLD,
    test_patch: TESTS,
    problem_statement: 'Field flags are lost',
    hints_text: '',
    created_at: '2024-05-01T00:00:00Z',
    language: 'python',
    FAIL_TO_PASS: ['tests/test_m.py::test_flags'],
    PASS_TO_PASS: ['tests/test_m.py::test_other'],
    image_name: 'docker.io/swerebenchv2/wtforms-wtforms:614-848d28d',
    install_config: { install: ['pip install -e .'], test_cmd: ['pytest -rA tests'], log_parser: 'parse_log_pytest', ...install },
    ...overrides,
  };
}

describe('SWE-rebench rows', () => {
  it('load with their own test command, parser and image, the repository at /<name>', async () => {
    const report = await loadTaskReport(await write('rebench.jsonl', [rebenchRow('wtforms__wtforms-614')]));
    expect(report.format).toBe('swe-rebench');
    const task = report.tasks[0]?.task;
    expect(task?.environment.image).toBe('docker.io/swerebenchv2/wtforms-wtforms:614-848d28d');
    expect(task?.workspace).toEqual({ kind: 'image', path: '/wtforms' });
    expect(task?.test_command).toBe('pytest -rA tests');
    expect(task?.log_parser).toBe('pytest');
  });

  it('map Go and cargo parsers of V2 rows, whose commands run as they are', async () => {
    const go = rebenchRow('a__b-1', { log_parser: 'parse_log_gotest', test_cmd: ['go build ./...', 'go test -v ./...'] }, {
      FAIL_TO_PASS: ['TestParse/empty'],
      PASS_TO_PASS: [],
    });
    const rust = rebenchRow('a__b-2', { log_parser: 'parse_log_cargo', test_cmd: 'cargo test' }, {
      FAIL_TO_PASS: ['parser::tests::empty'],
    });
    const tasks = await loadTasks(await write('rebench-langs.jsonl', [go, rust]));
    expect(tasks[0]?.log_parser).toBe('go-test');
    expect(tasks[0]?.test_command).toBe('go build ./...\ngo test -v ./...');
    expect(tasks[1]?.log_parser).toBe('cargo-test');
    expect(tasks[1]?.test_command).toBe('cargo test');
  });

  it('read V1 rows: docker_image, /testbed, the conda env and the test files appended', async () => {
    const v1 = rebenchRow('oemof__tespy-653', { test_cmd: 'pytest --no-header -rA --tb=no -p no:cacheprovider' }, {
      image_name: undefined,
      docker_image: 'swerebench/sweb.eval.x86_64.oemof_1776_tespy-653',
    });
    const [task] = await loadTasks(await write('rebench-v1.jsonl', [v1]));
    expect(task?.workspace).toEqual({ kind: 'image', path: '/testbed' });
    expect(task?.environment.image).toBe('swerebench/sweb.eval.x86_64.oemof_1776_tespy-653');
    expect(task?.test_command).toBe(
      'export PATH=/opt/miniconda3/envs/testbed/bin:$PATH\npytest --no-header -rA --tb=no -p no:cacheprovider tests/test_m.py tests/test_n.py',
    );
  });

  it('name the row of an unmappable log parser', async () => {
    const file = await write('rebench-js.jsonl', [rebenchRow('a__b-3'), rebenchRow('a__b-4', { log_parser: 'parse_log_js_4' })]);
    const err = await loadError(loadTasks(file));
    expect(err.line).toBe(2);
    expect(err.message).toContain('task a__b-4: install_config.log_parser: "parse_log_js_4" has no parser here');
  });

  it('name the row and field of a missing test_cmd, a missing image and a malformed image', async () => {
    let err = await loadError(loadTasks(await write('rebench-cmd.jsonl', [rebenchRow('a__b-5', { test_cmd: undefined })])));
    expect(err.message).toContain('→ at install_config.test_cmd');
    const noImage = rebenchRow('a__b-6', {}, { image_name: undefined });
    err = await loadError(loadTasks(await write('rebench-noimage.jsonl', [noImage])));
    expect(err.message).toContain('task a__b-6: image_name: the row names no image');
    const badImage = rebenchRow('a__b-7', {}, { image_name: 'Docker.io/UPPER case:tag' });
    err = await loadError(loadTasks(await write('rebench-badimage.jsonl', [badImage])));
    expect(err.message).toContain('rebench-badimage.jsonl:1: invalid task a__b-7');
    expect(err.message).toContain('an OCI image reference');
    expect(err.message).toContain('→ at environment.image');
  });

  it('warn about unknown install_config keys', async () => {
    const warnings: string[] = [];
    await loadTasks(await write('rebench-extra.jsonl', [rebenchRow('a__b-8', { flaky_retries: 3 })]), {
      warn: (w) => warnings.push(w),
    });
    expect(warnings).toEqual([expect.stringContaining('unknown SWE-rebench field "install_config.flaky_retries" ignored (in 1 row)')]);
  });
});

/** An R2E-Gym-Subset row as published on the hub (JSON columns as strings). */
function r2eGymRow(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const hash = 'f0d74880deec8fcd982bce639c93c5e130d41198';
  return {
    repo_name: 'aiohttp',
    docker_image: `namanjain12/aiohttp_final:${hash}`,
    commit_hash: hash,
    parsed_commit_content: JSON.stringify({
      old_commit_hash: '6c3f1d0a9b2e4f5a6b7c8d9e0f1a2b3c4d5e6f70',
      new_commit_hash: hash,
      commit_message: 'Fix cookie parsing',
      file_diffs: [],
    }),
    execution_result_content: '{}',
    modified_files: ['aiohttp/cookiejar.py'],
    relevant_files: [],
    num_non_test_files: 1,
    num_non_test_func_methods: 1,
    num_non_test_lines: 4,
    prompt: 'x',
    problem_statement: 'Cookies with quotes are parsed wrongly',
    expected_output_json: JSON.stringify({
      'TestCookieJar.test_quoted': 'PASSED',
      'test_plain[1-2]': 'PASSED',
      'TestCookieJar.test_broken - AssertionError': 'FAILED',
    }),
    ...overrides,
  };
}

describe('R2E-Gym rows', () => {
  it('load as published: tests hidden in the image, run_tests.sh, the tests expected to pass', async () => {
    const file = await write('r2e.jsonl', [r2eGymRow()]);
    const warnings: string[] = [];
    const report = await loadTaskReport(file, { warn: (w) => warnings.push(w) });
    expect(warnings).toEqual([]);
    expect(report.format).toBe('r2e-gym');
    const [task] = report.tasks.map((t) => t.task);
    expect(task).toMatchObject({
      instance_id: 'aiohttp-f0d74880deec8fcd982bce639c93c5e130d41198',
      repo: 'aiohttp',
      base_commit: '6c3f1d0a9b2e4f5a6b7c8d9e0f1a2b3c4d5e6f70',
      patch: '',
      test_patch: '',
      FAIL_TO_PASS: ['r2e_tests::TestCookieJar.test_quoted', 'r2e_tests::test_plain[1-2]'],
      PASS_TO_PASS: [],
      workspace: { kind: 'image', path: '/testbed' },
      environment: {
        image: 'namanjain12/aiohttp_final:f0d74880deec8fcd982bce639c93c5e130d41198',
        hidden_paths: ['/r2e_tests', '/testbed/r2e_tests', '/testbed/run_tests.sh'],
      },
      log_parser: 'pytest',
    });
    expect(task!.test_command).toContain('bash run_tests.sh');
    expect(await checkTasks(report.tasks)).toEqual([]);
  });

  it('name the row and field at fault', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [r2eGymRow({ expected_output_json: '{"a": ' }), 'expected_output_json'],
      [r2eGymRow({ expected_output_json: '{"a": "FAILED"}' }), 'expected_output_json: no test is expected to pass'],
      [r2eGymRow({ parsed_commit_content: '{}' }), 'parsed_commit_content'],
      [r2eGymRow({ commit_hash: 'HEAD' }), 'commit_hash'],
      [r2eGymRow({ docker_image: 'Not An Image' }), 'environment.image'],
      [r2eGymRow({ problem_statement: '' }), 'problem_statement'],
    ];
    for (const [i, [row, field]] of cases.entries()) {
      const file = await write(`r2e-bad-${i}.jsonl`, [r2eGymRow(), row]);
      const err = await loadError(loadTasks(file, { warn: () => undefined }));
      expect(err.message).toContain(`${file}:2:`);
      expect(err.message).toContain(field);
    }
  });

  it('warn of unknown columns', async () => {
    const file = await write('r2e-extra.jsonl', [r2eGymRow({ difficulty: 'hard' })]);
    const warnings: string[] = [];
    await loadTasks(file, { warn: (w) => warnings.push(w) });
    expect(warnings).toEqual([`${file}:1: unknown R2E-Gym field "difficulty" ignored (in 1 row)`]);
  });
});

describe('Harbor task folders', () => {
  async function harborTask(dir: string, toml: string, files: Record<string, string> = {}): Promise<void> {
    await mkdir(join(dir, 'tests'), { recursive: true });
    await writeFile(join(dir, 'task.toml'), toml);
    await writeFile(join(dir, 'instruction.md'), 'Write hello.txt containing "hello".\n');
    await writeFile(join(dir, 'tests', 'test.sh'), 'test -f /app/hello.txt && echo 1 > /logs/verifier/reward.txt\n');
    for (const [name, content] of Object.entries(files)) {
      await mkdir(join(dir, name, '..'), { recursive: true });
      await writeFile(join(dir, name), content);
    }
  }

  const TOML = `version = "1.0"

[metadata]
author_name = "A"
difficulty = "easy"

[verifier]
timeout_sec = 120.0
env = { MODE = "strict mode" }

[agent]
timeout_sec = 300.0

[environment]
docker_image = "registry.local:5000/tb/hello-world:1"
cpus = 1
memory_mb = 2048
`;

  it('map onto a script reward over tests/, in the task image', async () => {
    const dataset = join(root, 'harbor');
    await harborTask(join(dataset, 'hello-world'), TOML, { 'solution/solve.sh': 'echo hello > hello.txt\n' });
    const warnings: string[] = [];
    const report = await loadTaskReport(dataset, { warn: (w) => warnings.push(w) });
    expect(report.format).toBe('harbor');
    expect(warnings).toEqual([]);
    const task = report.tasks[0]?.task;
    expect(task?.instance_id).toBe('hello-world');
    expect(task?.problem_statement).toContain('hello.txt');
    expect(task?.environment.image).toBe('registry.local:5000/tb/hello-world:1');
    expect(task?.workspace).toEqual({ kind: 'image', path: '/app' });
    expect(task?.reward).toEqual({
      kind: 'script',
      dir: join(dataset, 'hello-world', 'tests'),
      command: "env MODE='strict mode' bash /tests/test.sh",
      reward_file: '/logs/verifier/reward.txt',
    });
    expect(task?.timeouts.test_s).toBe(120);
  });

  it('say what to do with a task that has only a Dockerfile', async () => {
    const dir = join(root, 'harbor-df', 'build-me');
    await harborTask(dir, '[verifier]\ntimeout_sec = 60.0\n', { 'environment/Dockerfile': 'FROM debian\n' });
    const err = await loadError(loadTasks(join(root, 'harbor-df')));
    expect(err.file).toBe(join(dir, 'task.toml'));
    expect(err.message).toContain('task build-me: environment.docker_image: the task has only');
    expect(err.message).toContain('build and push it');
  });

  it('name the folder and field of a bad task.toml, and warn about unknown keys', async () => {
    const dir = join(root, 'harbor-bad', 'slow');
    await harborTask(dir, '[verifier]\ntimeout_sec = "soon"\n');
    let err = await loadError(loadTasks(join(root, 'harbor-bad')));
    expect(err.message).toContain(`${join(dir, 'task.toml')}: invalid task.toml`);
    expect(err.message).toContain('→ at verifier.timeout_sec');

    const odd = join(root, 'harbor-odd', 'odd');
    await harborTask(odd, `${TOML}\n[verifier.extra]\nx = 1\n`.replace('[verifier]', '[verifier]\nretries = 2'));
    const warnings: string[] = [];
    await loadTasks(join(root, 'harbor-odd'), { warn: (w) => warnings.push(w) });
    expect(warnings).toEqual([
      expect.stringContaining('unknown Harbor field "verifier.retries"'),
      expect.stringContaining('unknown Harbor field "verifier.extra"'),
    ]);

    const noTests = join(root, 'harbor-notests', 't');
    await harborTask(noTests, TOML);
    await rm(join(noTests, 'tests', 'test.sh'));
    err = await loadError(loadTasks(join(root, 'harbor-notests')));
    expect(err.message).toContain('task t: tests/test.sh');
  });
});
