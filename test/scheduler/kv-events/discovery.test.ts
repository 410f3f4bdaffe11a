import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { discoverKvEventSource, KvEventDiscoveryError } from '../../../scheduler/kv-events/discovery.js';

/**
 * `GET /kv_event_sources` in the two shapes vLLM has answered with: 0.32's object keyed by rank
 * (what test/engines/vllm-real.test.ts reads from the real engine) and newer vLLMs' list.
 */

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

async function engineAnswering(status: number, body: unknown): Promise<string> {
  server = createServer((request, response) => {
    response.writeHead(request.url === '/kv_event_sources' ? status : 404, { 'content-type': 'application/json' });
    response.end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return `http://127.0.0.1:${address.port}`;
}

describe('discoverKvEventSource', () => {
  it("reads vLLM 0.32's per-rank object; a wildcard bind address is reached at the engine's host", async () => {
    const url = await engineAnswering(200, { '0': { enable_kv_cache_events: true, publisher: 'zmq', endpoint: 'tcp://*:5557', replay_endpoint: 'tcp://0.0.0.0:5558', buffer_steps: 10000, topic: 'kv' } });
    expect(await discoverKvEventSource(url, 2_000)).toEqual({ endpoint: 'tcp://127.0.0.1:5557', replayEndpoint: 'tcp://127.0.0.1:5558', topic: 'kv' });
  });

  it('reads the list form; no replay endpoint and an empty topic are left out', async () => {
    const url = await engineAnswering(200, [{ data_parallel_rank: 0, endpoint: 'tcp://10.0.0.1:5557', replay_endpoint: null, topic: '' }]);
    expect(await discoverKvEventSource(url, 2_000)).toEqual({ endpoint: 'tcp://10.0.0.1:5557' });
  });

  it('refuses an engine without events, with several ranks, or an unreadable answer', async () => {
    await expect(discoverKvEventSource(await engineAnswering(404, { detail: 'Not Found' }), 2_000)).rejects.toThrow(/answered 404/);
    server!.close();
    await expect(discoverKvEventSource(await engineAnswering(200, []), 2_000)).rejects.toThrow(KvEventDiscoveryError);
    server!.close();
    const two = [0, 1].map((rank) => ({ data_parallel_rank: rank, endpoint: `tcp://*:${5557 + rank}`, topic: '' }));
    await expect(discoverKvEventSource(await engineAnswering(200, two), 2_000)).rejects.toThrow(/reports 2 KV event publishers/);
    server!.close();
    await expect(discoverKvEventSource(await engineAnswering(200, { sources: 'none' }), 2_000)).rejects.toThrow(/not a list of publishers/);
  });
});
