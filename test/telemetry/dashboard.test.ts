/**
 * The Grafana dashboard and the README's metric table against the metrics the code registers, so
 * that neither drifts: every series a panel queries exists, every `rollout_…` metric has a panel
 * and a README row, and every README row names a metric that exists.
 */
import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../telemetry/metrics.js';

interface Panel {
  title: string;
  targets?: { expr: string }[];
}

const dashboard = JSON.parse(readFileSync(new URL('../../telemetry/grafana-dashboard.json', import.meta.url), 'utf8')) as { panels: Panel[] };
const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
/** The PromQL functions and keywords the panels use; any other identifier must be a series. */
const PROMQL = new Set(['sum', 'min', 'max', 'by', 'rate', 'increase', 'histogram_quantile']);

async function registered(): Promise<{ metrics: Map<string, string>; series: Set<string> }> {
  const metrics = new Map((await createMetrics(new Registry()).registry.getMetricsAsJSON()).map((m) => [m.name, String(m.type)]));
  const series = new Set<string>();
  for (const [name, type] of metrics) {
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) series.add(name + suffix);
    else if (type === 'summary') for (const suffix of ['', '_sum', '_count']) series.add(name + suffix);
    else series.add(name);
  }
  return { metrics, series };
}

/** The series an expression reads: its identifiers, less functions, grouping labels, ranges and numbers. */
function seriesOf(expr: string): string[] {
  const bare = expr.replace(/by \([^)]*\)/g, '').replace(/\[[^\]]*\]/g, '').replace(/\b\d+(\.\d+)?(e\d+)?\b/g, '');
  return (bare.match(/[a-zA-Z_:][a-zA-Z0-9_:]*/g) ?? []).filter((token) => !PROMQL.has(token));
}

const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));

describe('metrics documentation and dashboard', () => {
  it('queries only series the code registers', async () => {
    const { series } = await registered();
    expect(exprs.length).toBeGreaterThan(10);
    for (const expr of exprs) for (const name of seriesOf(expr)) expect(series, `${name} in ${expr}`).toContain(name);
  });

  it('has a panel for every rollout metric', async () => {
    const { metrics } = await registered();
    const queried = new Set(exprs.flatMap(seriesOf).map((s) => s.replace(/_(bucket|sum|count)$/, '')));
    for (const name of metrics.keys()) if (name.startsWith('rollout_')) expect(queried, name).toContain(name);
  });

  it('documents every rollout metric in the README, with its type, and nothing else', async () => {
    const { metrics } = await registered();
    const rows = new Map([...readme.matchAll(/^\| `(rollout_[a-z0-9_]+)` \| (counter|gauge|histogram) \|/gm)].map((m) => [m[1]!, m[2]!]));
    const ours = [...metrics].filter(([name]) => name.startsWith('rollout_'));
    expect(ours.length).toBeGreaterThan(15);
    for (const [name, type] of ours) expect(rows.get(name), name).toBe(type);
    expect(rows.size).toBe(ours.length);
  });
});
