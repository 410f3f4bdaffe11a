import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { BatchManifest } from '../activities/types.js';
import { startStack, type Stack } from '../stack/stack.js';
import { CLI, runCli } from './helpers/processes.js';
import { startTestEngines, testConfig, type TestEngines } from './helpers/stack.js';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rollout-cli-'));
/** A configuration whose task roots take the task files these tests write. */
const roots = path.join(tmp, 'roots.json');
writeFileSync(roots, JSON.stringify({ batch: { taskRoots: [tmp] } }));

describe('the rollout command on bad input', () => {
  it('names a missing task file and exits 2 without starting anything', async () => {
    const r = await runCli(['batch', 'start', '-c', roots, '--tasks', path.join(tmp, 'missing.jsonl')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/missing\.jsonl: no such file/);
    expect(r.stderr).not.toMatch(/cannot reach Temporal/);
  });

  it('points at the malformed line of a JSONL task file', async () => {
    const file = path.join(tmp, 'bad.jsonl');
    writeFileSync(file, '{not json}\n{"instance_id": "a"}\n');
    const r = await runCli(['batch', 'start', '-c', roots, '--tasks', file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${file}:1`);
    expect(r.stderr).toMatch(/malformed|JSON/);
  });

  it('reports schema violations of a task', async () => {
    const file = path.join(tmp, 'task.json');
    writeFileSync(file, JSON.stringify({ instance_id: 'x', problem_statement: '' }));
    const r = await runCli(['batch', 'start', '-c', roots, '--tasks', file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/problem_statement|FAIL_TO_PASS/);
  });

  it('rejects an invalid configuration file with the key at fault', async () => {
    const file = path.join(tmp, 'config.yaml');
    writeFileSync(file, 'batch:\n  n: -3\nunknownKey: 1\n');
    const r = await runCli(['batch', 'start', '--config', file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('batch.n');
    expect(r.stderr).toContain('unknownKey');
  });

  it('rejects unknown commands and flags with usage', async () => {
    expect((await runCli(['frobnicate'])).stderr).toContain('usage: rollout');
    expect((await runCli(['demo', '--n', 'zero'])).code).toBe(2);
  });
});

describe('the role commands on bad input', () => {
  const pg = 'postgres://rollout@db.invalid:5432/rollout';
  const joining = ['--temporal-address', '127.0.0.1:1', '--gateway-url', 'http://127.0.0.1:1'];

  it('take no arguments', async () => {
    const r = await runCli(['gateway', 'extra']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('rollout gateway takes no arguments');
  });

  it('name what a joining api or worker lacks', async () => {
    const api = await runCli(['api', '--temporal-address', '127.0.0.1:1']);
    expect(api.code).toBe(2);
    expect(api.stderr).toContain('needs gateway.url');
    const worker = await runCli(['worker', '--gateway-url', 'http://127.0.0.1:1']);
    expect(worker.code).toBe(2);
    expect(worker.stderr).toContain('needs temporal.address');
  });

  it('refuse simulated engines on any free port, where nobody finds them', async () => {
    const file = path.join(tmp, 'engines.yaml');
    writeFileSync(file, 'engineSim:\n  basePort: 0\n');
    const r = await runCli(['engines', '--config', file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('engineSim.basePort');
  });

  it('reject half a TLS client certificate', async () => {
    const file = path.join(tmp, 'tls.yaml');
    writeFileSync(file, 'temporal:\n  address: temporal.invalid:7233\n  tls:\n    certFile: client.pem\n');
    const r = await runCli(['worker', '--config', file, '--gateway-url', 'http://127.0.0.1:1']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('certFile and keyFile go together');
  });

  it('with a shared PostgreSQL store, fail at start-up naming the missing token env var', async () => {
    for (const command of ['gateway', 'worker', 'api']) {
      const r = await runCli([command, '--store-url', pg, ...joining]);
      expect(r.code, command).toBe(2);
      expect(r.stderr, command).toMatch(/gateway\.adminToken \(or env ROLLOUT_GATEWAY_ADMIN_TOKEN\) must be set/);
    }
    const file = path.join(tmp, 'shared.yaml');
    writeFileSync(file, `store:\n  url: ${pg}\ngateway:\n  adminToken: secret\n`);
    const r = await runCli(['api', '--config', file, ...joining]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/api\.token \(or env ROLLOUT_API_TOKEN\) must be set/);
  });
});

describe('the rollout command refuses a batch past its bounds, before anything starts', () => {
  let connection: Connection;
  let client: Client;
  const temporal = () => ['--temporal-address', inject('temporalAddress')];

  beforeAll(async () => {
    connection = await Connection.connect({ address: inject('temporalAddress') });
    client = new Client({ connection });
  });
  afterAll(async () => {
    await connection?.close();
  });

  async function workflowExists(id: string): Promise<boolean> {
    try {
      await client.workflow.getHandle(id).describe();
      return true;
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return false;
      throw error;
    }
  }

  const episodes = path.join(tmp, 'episodes.json');
  writeFileSync(episodes, JSON.stringify({ bounds: { maxEpisodesPerBatch: 10 } }));

  it.each([
    [['--n', '65'], 'n is 65, above bounds.maxSamplesPerTask = 64'],
    [['--n', '1000000000'], 'bounds.maxSamplesPerTask'],
    [['--concurrency', '513'], 'concurrency is 513, above bounds.maxConcurrency = 512'],
    [['-c', episodes], 'episodes (tasks × n) is 32, above bounds.maxEpisodesPerBatch = 10'],
    [['--tasks', '/etc/passwd'], 'outside batch.taskRoots'],
    [['--tasks', '../../../etc'], 'outside batch.taskRoots'],
  ])('batch start %j exits 2 naming the field and its bound, and starts no workflow', async (flags, mentions) => {
    const id = `cli-bound-${Math.random().toString(36).slice(2, 8)}`;
    const r = await runCli(['batch', 'start', ...temporal(), '--id', id, ...flags]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(mentions);
    expect(await workflowExists(id)).toBe(false);
  });

  it('demo exits 2 on a bound before it starts the stack', async () => {
    const r = await runCli(['demo', '--n', '1000000000', '--data-dir', path.join(tmp, 'demo')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('bounds.maxSamplesPerTask');
    expect(r.stdout).not.toContain('Temporal');
  });

  it.each([
    [['batch', 'start', '--id', 'a..b']],
    [['batch', 'start', '--id', 'a/b']],
    [['batch', 'status', '../x']],
    [['batch', 'export', 'a..b', '--out', path.join(tmp, 'x.arrow')]],
  ])('refuses the unsafe batch id of %j with exit 2', async (args) => {
    const r = await runCli([...args, ...temporal()]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/batch id ".*" is not valid/);
    expect(await workflowExists('a..b')).toBe(false);
  });

  it('refuses a configured bound above its default', async () => {
    const file = path.join(tmp, 'raised.json');
    writeFileSync(file, JSON.stringify({ bounds: { maxSamplesPerTask: 100 } }));
    const r = await runCli(['batch', 'start', '-c', file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('bounds.maxSamplesPerTask');
  });
});

/** Runs `command` in a shell under a pseudo-terminal (util-linux `script`); `input` is typed into it once `typeWhen` shows in its output. */
function runInTerminal(command: string, typing?: { when: RegExp; input: string }): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('script', ['-qfec', command, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    let typed = false;
    const onData = (d: Buffer) => {
      output += d.toString();
      if (typing && !typed && typing.when.test(output)) {
        typed = true;
        child.stdin.write(typing.input);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => resolve({ code, output }));
  });
}

const ESC = String.fromCharCode(27);
/** A plain progress line (cli/progress-bar.ts renderLine). */
const PLAIN_LINE = /^(\S+): (\d+) done, (\d+) running, (\d+) failed, (\d+) queued of (\d+); mean reward \S+; \S+ episodes\/min; \S+ left$/;

describe('live progress of batch start --wait, on a real stack', () => {
  let engines: TestEngines;
  let stack: Stack;
  let configFile: string;

  beforeAll(async () => {
    engines = await startTestEngines({ count: 1 });
    const config = testConfig({ engines: engines.instances, batch: { concurrency: 4 } });
    stack = await startStack(config);
    configFile = path.join(tmp, 'stack.json');
    writeFileSync(configFile, JSON.stringify(config));
  });
  afterAll(async () => {
    await stack?.stop();
    await engines?.close();
  });

  const start = (id: string) => ['batch', 'start', '-c', configFile, '--tasks', 'builtin', '--n', '1', '--id', id, '--wait'];

  it('prints plain lines when piped, consistent counts, and a summary matching the manifest and the store', async () => {
    const id = `cli-piped-${Date.now()}`;
    const r = await runCli(start(id));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toContain(ESC);
    const lines = r.stdout.split('\n');
    const progress = lines.map((l) => PLAIN_LINE.exec(l)).filter((m) => m !== null);
    expect(progress.length).toBeGreaterThan(0);
    for (const m of progress) {
      const [done, running, failed, queued, total] = m.slice(2, 7).map(Number);
      expect(m[1]).toBe(id);
      expect(done! + running! + failed! + queued!).toBe(total);
      expect(total).toBe(8);
    }
    const ended = progress.map((m) => Number(m[2]) + Number(m[4]));
    expect(ended).toEqual([...ended].sort((a, b) => a - b));
    const summary = lines.find((l) => l.startsWith(`${id}: ended, `));
    expect(summary).toMatch(new RegExp(`^${id}: ended, (\\d+) done, (\\d+) failed, 0 running, 0 queued of 8; mean reward \\d\\.\\d\\d; \\d+\\.\\d episodes/min over \\d+:\\d\\d$`));
    const [, done, failed] = /ended, (\d+) done, (\d+) failed/.exec(summary!)!.map(Number);
    const manifest = JSON.parse(r.stdout.slice(r.stdout.indexOf('{'))) as BatchManifest;
    expect(done).toBe(manifest.groups.reduce((sum, g) => sum + g.n_ok, 0));
    expect(done! + failed!).toBe(manifest.stats.episodes);
    const stored = await stack.store.listEpisodes(id);
    expect(stored.filter((e) => e.reward !== null)).toHaveLength(done!);
  });

  it('redraws a bar in place under a terminal, and ends with the cursor shown and a summary, also on Ctrl-C', async () => {
    const id = `cli-tty-${Date.now()}`;
    const command = (batchId: string) => `stty cols 100; exec ${process.execPath} ${CLI} ${start(batchId).join(' ')}`;
    const r = await runInTerminal(command(id));
    expect(r.code, r.output).toBe(0);
    expect(r.output).toContain(`${ESC}[?25l`);
    const redraws = r.output.split(`\r${ESC}[2K`).slice(1);
    expect(redraws.length).toBeGreaterThan(0);
    for (const frame of redraws) expect(frame.split(/\r?\n/)[0]!.length).toBeLessThanOrEqual(99);
    expect(redraws[0]).toMatch(/^\[[#x>-]+\] \d+\/8 {2}\d+ done \d+ running \d+ failed {2}reward \S+ {2}\S+\/min {2}left \S+/);
    expect(r.output).toMatch(new RegExp(`\\[#+\\] 8/8  8 done 0 running 0 failed .*\r?\n${ESC}\\[\\?25h${id}: ended, 8 done, 0 failed, 0 running, 0 queued of 8; `));

    const interrupted = `cli-tty-int-${Date.now()}`;
    const i = await runInTerminal(command(interrupted), { when: /\] \d+\/8 /, input: '\x03' });
    expect(i.code, i.output).toBe(130);
    expect(i.output).toContain(`${ESC}[?25h${interrupted}: interrupted at `);
    expect(i.output).toContain(`SIGINT: batch ${interrupted} goes on`);
    await stack.client.workflow.getHandle(interrupted).terminate('test done');
  });
});
