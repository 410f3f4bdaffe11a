import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchManifest } from '../../activities/types.js';
import { buildBatchInput, followBatch, startBatch } from '../../stack/batches.js';
import { freePort } from '../../stack/ports.js';
import { startS3Server, type S3Server } from '../../stack/s3-server.js';
import { startStack, type Stack } from '../../stack/stack.js';
import { PROJECT_ROOT } from '../../stack/temporal-binary.js';
import { episodeIdOf } from '../../workflows/batch.js';
import { runCli } from '../helpers/processes.js';
import { startTestEngines, testConfig, type TestEngines } from '../helpers/stack.js';

/**
 * The manifest check bites: the artifact store refuses every group file (its bucket does not
 * exist on a real S3 server), so no ok episode's rows can be delivered. The batch must say so,
 * and nothing downstream may hand the data out as if whole.
 */
const root = mkdtempSync(path.join(os.tmpdir(), 'rollout-export-check-'));
const batchId = `bite-${Date.now()}`;
let server: S3Server;
let engines: TestEngines;
let stack: Stack;
let manifest: BatchManifest;
let configFile: string;

beforeAll(async () => {
  server = await startS3Server({ dataDir: path.join(root, 's3'), port: await freePort() });
  engines = await startTestEngines({ count: 1 });
  const config = testConfig({
    engines: engines.instances,
    artifacts: {
      uri: 's3://no-such-bucket/rollouts',
      s3: { endpoint: server.endpoint, region: server.region, accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
    },
  });
  configFile = path.join(root, 'config.json');
  writeFileSync(configFile, JSON.stringify(config));
  stack = await startStack(config);
  const input = await buildBatchInput(config, { batchId, tasks: 'builtin', taskIds: ['py-slugify-1', 'js-lru-cache-1'], n: 2, agent: 'builtin', filterUniformGroups: false });
  manifest = await followBatch(await startBatch(stack.client, config, input), () => undefined, 500);
});

afterAll(async () => {
  await stack?.stop();
  await engines?.close();
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe('a batch whose group files cannot be written', () => {
  it('reports every group export_failed with its ok episodes named, and the batch partial', () => {
    expect(manifest.status).toBe('partial');
    expect(manifest.stats.export_failed).toBe(2);
    expect(manifest.files).toEqual([]);
    for (const group of manifest.groups) {
      expect(group.status).toBe('export_failed');
      expect(group.file).toBeNull();
      const ok = group.rewards.flatMap((r, sample) => (r === null ? [] : [episodeIdOf(batchId, group.task_id, sample)]));
      expect(ok.length).toBe(group.n_ok);
      expect(group.missing_episode_ids).toEqual(ok);
    }
  });

  it('answers the batch API data route with 409 export_failed, naming the episodes', async () => {
    const response = await fetch(`${stack.apiUrl}/v1/batches/${batchId}/data`, { headers: { authorization: `Bearer ${stack.apiToken}` } });
    expect(response.status).toBe(409);
    const body = (await response.json()) as { error: { type: string; message: string } };
    expect(body.error.type).toBe('export_failed');
    expect(body.error.message).toContain(manifest.groups[0]!.missing_episode_ids![0]);
  });

  it('makes `rollout batch export` exit 3 without writing a file', async () => {
    const out = path.join(root, 'export.arrow');
    const result = await runCli(['batch', 'export', batchId, '--out', out, '--config', configFile]);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('export_failed');
    expect(spawnSync('test', ['-e', out]).status).toBe(1);
  });

  it('makes the Python client raise IncompleteGroupError on the manifest and on each group', () => {
    const script = [
      'import json, sys',
      'from agent_rollout import IncompleteGroupError, manifest_groups, read_table',
      'manifest = json.load(sys.stdin)',
      'raised = []',
      'try:',
      '    read_table(manifest)',
      'except IncompleteGroupError as e:',
      '    raised.append(e.missing_episode_ids)',
      'for group in manifest_groups(manifest):',
      '    try:',
      '        group.read_table()',
      '    except IncompleteGroupError as e:',
      '        raised.append(e.missing_episode_ids)',
      'print(json.dumps(raised))',
    ].join('\n');
    const python = spawnSync(path.join(PROJECT_ROOT, '.tools', 'venv', 'bin', 'python'), ['-c', script], { input: JSON.stringify(manifest), encoding: 'utf8' });
    expect(python.stderr).toBe('');
    const raised = JSON.parse(python.stdout) as string[][];
    expect(raised).toEqual([manifest.groups[0]!.missing_episode_ids, ...manifest.groups.map((g) => g.missing_episode_ids)]);
  });
});
