import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the engine returned for one completion request, as seen on the wire. */
export interface RecordedCompletion {
  /** The request body as the engine received it. */
  request: Record<string, unknown>;
  /** Every streamed chunk (or the one JSON answer), parsed. */
  chunks: Record<string, unknown>[];
  promptIds: number[];
  tokenIds: number[];
  logprobs: number[];
}

/** A JSON request body sent to the engine, on any path (SGLang's `/generate` too). */
export interface PostedBody {
  path: string;
  body: Record<string, unknown>;
}

/** A change to a completion request's body on its way to the engine. */
export type RequestRewrite = (body: Record<string, unknown>) => Record<string, unknown>;

/**
 * A real HTTP proxy in front of an engine that records every `/v1/completions` answer, so tests
 * can compare what the gateway stored with what the engine actually sent. `rewriteNext` changes
 * the next completion request only, so a real engine can be made to reject one.
 */
export async function startRecordingProxy(
  target: string,
  recorded: RecordedCompletion[] = [],
): Promise<{ url: string; recorded: RecordedCompletion[]; posted: PostedBody[]; rewriteNext(rewrite: RequestRewrite): void; close(): Promise<void> }> {
  const posted: PostedBody[] = [];
  let pending: RequestRewrite | undefined;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      let body = Buffer.concat(chunks);
      if (pending && req.url?.startsWith('/v1/completions')) {
        body = Buffer.from(JSON.stringify(pending(JSON.parse(body.toString()) as Record<string, unknown>)));
        pending = undefined;
      }
      if (req.method === 'POST' && body.length > 0) posted.push({ path: req.url ?? '', body: JSON.parse(body.toString()) as Record<string, unknown> });
      let upstream: Response;
      let text: string;
      try {
        upstream = await fetch(`${target}${req.url}`, { method: req.method, headers: { 'content-type': 'application/json' }, body: req.method === 'GET' ? undefined : body });
        text = await upstream.text();
      } catch (error) {
        // The engine closed the connection (it stopped, or dropped an idle keep-alive socket as
        // this request reused it): a proxy answers 502, as the gateway would see from a real one.
        res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `recording proxy: upstream failed: ${(error as Error).message}` } }));
        return;
      }
      res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' });
      res.end(text);
      if (req.url?.startsWith('/v1/completions') && upstream.ok) {
        const request = JSON.parse(body.toString()) as Record<string, unknown> & { prompt: number[] };
        const entry: RecordedCompletion = { request, chunks: [], promptIds: request.prompt, tokenIds: [], logprobs: [] };
        for (const line of text.split('\n')) {
          if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
          const chunk = JSON.parse(line.slice(6)) as {
            choices?: { token_ids?: number[] | null; logprobs?: { tokens: string[]; token_logprobs: number[] } | null }[];
          };
          entry.chunks.push(chunk);
          // An error event has no choices.
          for (const choice of chunk.choices ?? []) {
            // Ids as `return_token_ids` or, as the gateway asks, `token_id:<id>` tokens.
            entry.tokenIds.push(...(choice.token_ids ?? (choice.logprobs?.tokens ?? []).map((t) => Number(t.slice('token_id:'.length)))));
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
    posted,
    rewriteNext: (rewrite) => {
      pending = rewrite;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
