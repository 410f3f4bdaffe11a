/**
 * The one seam that times sandbox operations (sandbox/metered.ts), over a real bubblewrap
 * provider: create, exec and destroy are timed, a create that throws is counted as a failure, and
 * every other member is the provider's own.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BubblewrapProvider } from '../../sandbox/bubblewrap.js';
import { FaultInjectingProvider } from '../../sandbox/fault-injection.js';
import { meteredSandbox } from '../../sandbox/metered.js';
import { createMetrics, type RolloutMetrics } from '../../telemetry/metrics.js';
import { parseExposition, total } from '../helpers/metrics-scrape.js';
import { removeDirs, tempDir } from '../sandbox/helpers.js';

const dirs: string[] = [];
let provider: BubblewrapProvider;
let workspace: string;

beforeAll(async () => {
  const root = await tempDir('metered-sandbox');
  dirs.push(root);
  workspace = join(root, 'workspace');
  await mkdir(workspace);
  await writeFile(join(workspace, 'a.txt'), 'a');
  provider = new BubblewrapProvider({ rootDir: join(root, 'sandboxes') });
});

afterAll(async () => {
  await provider?.release();
  await removeDirs(dirs);
});

async function counts(metrics: RolloutMetrics, name: string, operation: string): Promise<number> {
  return total(parseExposition(await metrics.registry.metrics()), name, { operation });
}

describe('metered sandbox provider', () => {
  it('times create, exec and destroy of a real sandbox, and passes everything else through', async () => {
    const metrics = createMetrics(new Registry(), { processMetrics: false });
    const sandbox = meteredSandbox(provider, metrics.sandbox);
    const info = await sandbox.create({ idempotencyKey: `metered-${Date.now()}`, workspaceDir: workspace });
    expect((await sandbox.exec(info.id, ['cat', 'a.txt'])).stdout).toBe('a');
    // A command that fails is an answer, not a failed operation.
    expect((await sandbox.exec(info.id, { shell: 'exit 3' })).exitCode).toBe(3);
    expect(await sandbox.status(info.id)).toBe('running');
    expect(sandbox.name).toBe(provider.name);
    await sandbox.destroy(info.id);
    expect(await sandbox.status(info.id)).toBe('gone');
    expect(await counts(metrics, 'rollout_sandbox_operation_seconds_count', 'create')).toBe(1);
    expect(await counts(metrics, 'rollout_sandbox_operation_seconds_count', 'exec')).toBe(2);
    expect(await counts(metrics, 'rollout_sandbox_operation_seconds_count', 'destroy')).toBe(1);
    expect(await counts(metrics, 'rollout_sandbox_operation_seconds_sum', 'create')).toBeGreaterThan(0);
    for (const operation of ['create', 'exec', 'destroy']) expect(await counts(metrics, 'rollout_sandbox_failures_total', operation)).toBe(0);
  });

  it('counts a create that throws as a failure, and the error reaches the caller', async () => {
    const metrics = createMetrics(new Registry(), { processMetrics: false });
    const sandbox = meteredSandbox(new FaultInjectingProvider(provider, { createFailureRate: 1 }), metrics.sandbox);
    await expect(sandbox.create({ idempotencyKey: `failing-${Date.now()}`, workspaceDir: workspace })).rejects.toThrow();
    expect(await counts(metrics, 'rollout_sandbox_failures_total', 'create')).toBe(1);
    expect(await counts(metrics, 'rollout_sandbox_operation_seconds_count', 'create')).toBe(1);
  });
});
