import { z } from 'zod';
import type { KvEventSource } from '../instances.js';

/** An engine's event publishers could not be used: it names none, or several. */
export class KvEventDiscoveryError extends Error {
  override name = 'KvEventDiscoveryError';
}

const Source = z.object({ endpoint: z.string(), replay_endpoint: z.string().nullish(), topic: z.string().nullish() }).passthrough();

/**
 * vLLM's `GET /kv_event_sources`: one source per data-parallel rank, as a list (newer vLLMs) or an
 * object keyed by rank (0.32, which lists its whole KV-events configuration per rank).
 */
const SourcesSchema = z.union([z.array(Source), z.record(z.string(), Source)]);

/**
 * Where the engine at `engineUrl` publishes its KV events, as it reports it. A publisher bound to
 * every interface (`tcp://*:5557`, `0.0.0.0`) is reached at the engine URL's host. An engine with
 * several data-parallel ranks has one cache per rank behind one URL, which one index of the
 * instance cannot describe: that is a `KvEventDiscoveryError`, as is an engine with no publisher.
 */
export async function discoverKvEventSource(engineUrl: string, timeoutMs: number): Promise<KvEventSource> {
  const response = await fetch(`${engineUrl}/kv_event_sources`, { signal: AbortSignal.timeout(timeoutMs) });
  const text = await response.text();
  if (!response.ok) throw new KvEventDiscoveryError(`${engineUrl}/kv_event_sources answered ${response.status}: ${text.slice(0, 200)}`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const parsed = SourcesSchema.safeParse(json);
  if (!parsed.success) throw new KvEventDiscoveryError(`${engineUrl}/kv_event_sources is not a list of publishers: ${text.slice(0, 200)}`);
  const sources = Array.isArray(parsed.data) ? parsed.data : Object.values(parsed.data);
  if (sources.length !== 1) throw new KvEventDiscoveryError(`${engineUrl} reports ${sources.length} KV event publishers; one (a single data-parallel rank) is supported`);
  const host = new URL(engineUrl).hostname;
  const [source] = sources as [z.infer<typeof Source>];
  return {
    endpoint: reachable(source.endpoint, host),
    ...(source.replay_endpoint ? { replayEndpoint: reachable(source.replay_endpoint, host) } : {}),
    ...(source.topic ? { topic: source.topic } : {}),
  };
}

/** A bind address as a connect address: a wildcard host becomes the engine's (an IPv6 hostname keeps its brackets). */
function reachable(endpoint: string, host: string): string {
  return endpoint.replace(/^tcp:\/\/(\*|0\.0\.0\.0|\[::\]|::)(?=:\d+$)/, `tcp://${host}`);
}
