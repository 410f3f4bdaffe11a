/** Reads a Prometheus text exposition into samples, for the metrics tests. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (m[2] ?? '').matchAll(LABEL)) labels[key!] = value!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** The sum of every sample of `name` whose labels include `labels`. */
export function total(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/** GET `<url>/metrics` with `token` (none: no authorization header). */
export async function scrape(url: string, token?: string): Promise<{ status: number; samples: Sample[]; contentType: string | null }> {
  const r = await fetch(`${url}/metrics`, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
  const text = await r.text();
  return { status: r.status, contentType: r.headers.get('content-type'), samples: r.status === 200 ? parseExposition(text) : [] };
}
