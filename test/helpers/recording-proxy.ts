import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the engine returned for one completion request, as seen on the wire. */
export interface RecordedCompletion {
  promptIds: number[];
  tokenIds: number[];
  logprobs: number[];
}

/**
 * A real HTTP proxy in front of an engine that records every `/v1/completions` answer, so tests
 * can compare what the gateway stored with what the engine actually sent.
 */
export async function startRecordingProxy(
  target: string,
  recorded: RecordedCompletion[] = [],
): Promise<{ url: string; recorded: RecordedCompletion[]; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      const upstream = await fetch(`${target}${req.url}`, { method: req.method, headers: { 'content-type': 'application/json' }, body: req.method === 'GET' ? undefined : body });
      res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' });
      const text = await upstream.text();
      res.end(text);
      if (req.url?.startsWith('/v1/completions') && upstream.ok) {
        const prompt = (JSON.parse(body.toString()) as { prompt: number[] }).prompt;
        const entry: RecordedCompletion = { promptIds: prompt, tokenIds: [], logprobs: [] };
        for (const line of text.split('\n')) {
          if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
          const chunk = JSON.parse(line.slice(6)) as { choices: { token_ids?: number[]; logprobs?: { token_logprobs: number[] } }[] };
          for (const choice of chunk.choices) {
            entry.tokenIds.push(...(choice.token_ids ?? []));
            entry.logprobs.push(...(choice.logprobs?.token_logprobs ?? []));
          }
        }
        recorded.push(entry);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    recorded,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
