import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from './helpers/processes.js';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rollout-cli-'));

describe('the rollout command on bad input', () => {
  it('names a missing task file and exits 2 without starting anything', async () => {
    const r = await runCli(['batch', 'start', '--tasks', path.join(tmp, 'missing.jsonl')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/missing\.jsonl: no such file/);
    expect(r.stderr).not.toMatch(/cannot reach Temporal/);
  });

  it('points at the malformed line of a JSONL task file', async () => {
    const file = path.join(tmp, 'bad.jsonl');
    writeFileSync(file, '{not json}\n{"instance_id": "a"}\n');
    const r = await runCli(['batch', 'start', '--tasks', file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${file}:1`);
    expect(r.stderr).toMatch(/malformed|JSON/);
  });

  it('reports schema violations of a task', async () => {
    const file = path.join(tmp, 'task.json');
    writeFileSync(file, JSON.stringify({ instance_id: 'x', problem_statement: '' }));
    const r = await runCli(['batch', 'start', '--tasks', file]);
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
