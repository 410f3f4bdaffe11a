import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBatchInput, followBatch, startBatch } from '../../stack/batches.js';
import { freePort } from '../../stack/ports.js';
import { startStack } from '../../stack/stack.js';
import { PROJECT_ROOT } from '../../stack/temporal-binary.js';
import { episodeSpanContext, inSpan, tracingEnabled } from '../../telemetry/tracing.js';
import { waitForExit } from '../helpers/processes.js';
import { startTestEngines, testConfig } from '../helpers/stack.js';

/** An OpenTelemetry Collector with the OTLP receiver and the debug exporter (README, "Tracing"). */
const COLLECTOR = process.env.ROLLOUT_OTELCOL ?? path.join(PROJECT_ROOT, '.tools', 'bin', 'otelcol-rollout');

interface ExportedSpan {
  traceId: string;
  parentId: string;
  id: string;
  name: string;
  attributes: Record<string, string>;
}

/** The spans of the debug exporter's detailed output. */
function parseSpans(output: string): ExportedSpan[] {
  return output
    .split(/^Span #\d+$/m)
    .slice(1)
    .map((block) => {
      const field = (label: string) => new RegExp(`^\\s+${label}\\s*: ?(.*)$`, 'm').exec(block)?.[1]?.trim() ?? '';
      const attributes: Record<string, string> = {};
      for (const m of block.matchAll(/^\s+-> ([\w.]+): \w+\((.*)\)$/gm)) attributes[m[1]!] = m[2]!;
      return { traceId: field('Trace ID'), parentId: field('Parent ID'), id: field('ID'), name: field('Name'), attributes };
    });
}

describe('tracing off', () => {
  it('starts no SDK: spans only run their function, episodes have no span context', async () => {
    expect(tracingEnabled()).toBe(false);
    expect(episodeSpanContext('b/t/0')).toBeNull();
    expect(await inSpan('x', episodeSpanContext('b/t/0'), {}, async (span) => (span === null ? 'ran' : 'span'))).toBe('ran');
  });
});

describe('traces of a batch, exported to a real OpenTelemetry Collector', () => {
  let collector: ChildProcess;
  let output = '';
  let spans: ExportedSpan[] = [];
  const batchId = `traces-${Date.now()}`;

  beforeAll(async () => {
    if (!existsSync(COLLECTOR)) throw new Error(`no collector at ${COLLECTOR}: build it as README "Tracing" says, or set ROLLOUT_OTELCOL`);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rollout-otelcol-'));
    const port = await freePort();
    const file = path.join(dir, 'collector.yaml');
    writeFileSync(
      file,
      [
        'receivers:',
        '  otlp:',
        '    protocols:',
        '      http:',
        `        endpoint: 127.0.0.1:${port}`,
        'exporters:',
        '  debug:',
        '    verbosity: detailed',
        'service:',
        '  telemetry:',
        '    metrics:',
        '      level: none',
        '  pipelines:',
        '    traces:',
        '      receivers: [otlp]',
        '      exporters: [debug]',
        '',
      ].join('\n'),
    );
    collector = spawn(COLLECTOR, ['--config', file], { stdio: ['ignore', 'pipe', 'pipe'] });
    collector.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    collector.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const ready = Date.now();
    while (!/Everything is ready/.test(output)) {
      if (collector.exitCode !== null || Date.now() - ready > 30_000) throw new Error(`collector did not start: ${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }

    const engines = await startTestEngines({ count: 1 });
    const config = testConfig({ engines: engines.instances, telemetry: { otlpEndpoint: `http://127.0.0.1:${port}` } });
    const stack = await startStack(config);
    try {
      expect(tracingEnabled()).toBe(true);
      const input = await buildBatchInput(config, { batchId, tasks: 'builtin', n: 2, agent: 'builtin', taskIds: ['py-slugify-1'] });
      await followBatch(await startBatch(stack.client, config, input), () => undefined, 250);
    } finally {
      // Stopping the stack flushes the spans still pending.
      await stack.stop();
      await engines.close();
    }
    const flushed = Date.now();
    while (parseSpans(output).filter((s) => s.name === 'episode').length < 2 && Date.now() - flushed < 20_000) await new Promise((r) => setTimeout(r, 200));
    spans = parseSpans(output);
  });
  afterAll(async () => {
    collector?.kill('SIGTERM');
    if (collector) await waitForExit(collector);
  });

  it('has one episode span per episode, a root, with its outcome', () => {
    const episodes = spans.filter((s) => s.name === 'episode' && s.attributes['rollout.batch_id'] === batchId);
    expect(episodes).toHaveLength(2);
    for (const e of episodes) {
      expect(e.parentId).toBe('');
      expect(e.attributes['rollout.outcome']).toBe('ok');
      expect(e.attributes['rollout.task_id']).toBe('py-slugify-1');
    }
    expect(new Set(episodes.map((e) => e.traceId)).size).toBe(2);
  });

  it('hangs turns under their episode, engine calls under their turn, and sandbox commands under their episode', () => {
    const episodes = new Map(spans.filter((s) => s.name === 'episode' && s.attributes['rollout.batch_id'] === batchId).map((e) => [e.id, e]));
    const turns = spans.filter((s) => s.name === 'turn' && episodes.has(s.parentId));
    const engineCalls = spans.filter((s) => s.name === 'engine.generate');
    const commands = spans.filter((s) => s.name === 'sandbox.exec' && episodes.has(s.parentId));
    expect(turns.length).toBeGreaterThanOrEqual(2);
    for (const turn of turns) expect(turn.traceId).toBe(episodes.get(turn.parentId)!.traceId);
    const turnIds = new Map(turns.map((t) => [t.id, t]));
    const ownCalls = engineCalls.filter((c) => turnIds.has(c.parentId));
    expect(ownCalls.length).toBeGreaterThanOrEqual(turns.length);
    for (const call of ownCalls) {
      expect(call.traceId).toBe(turnIds.get(call.parentId)!.traceId);
      expect(call.attributes['rollout.engine']).toBe('sim-0');
      expect(Number(call.attributes['rollout.completion_tokens'])).toBeGreaterThan(0);
    }
    expect(commands.length).toBeGreaterThanOrEqual(2);
    for (const command of commands) expect(command.attributes['rollout.exit_code']).toMatch(/^-?\d+$/);
    // Only this batch ran: every turn and engine call is in its tree.
    expect(spans.filter((s) => s.name === 'turn')).toHaveLength(turns.length);
    expect(engineCalls).toHaveLength(ownCalls.length);
    expect(spans.filter((s) => s.name === 'sandbox.exec')).toHaveLength(commands.length);
  });
});
