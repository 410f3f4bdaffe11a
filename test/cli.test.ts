import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCli } from './helpers/processes.js';

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
