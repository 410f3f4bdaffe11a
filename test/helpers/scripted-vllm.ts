import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Codec } from '../../gateway/codec/index.js';
import type { EngineInstance } from '../../gateway/server.js';
import type { Store } from '../../trajectory/index.js';
import { startTestGateway, tempStore } from './gateway.js';
import { testCodec } from './stack.js';

/**
 * A real HTTP server speaking vLLM's streamed `/v1/completions` (token ids as `token_id:<id>`
 * log-prob labels), answering each request with the next scripted id list, verbatim. For turns
 * engine-sim cannot produce: an immediate end-of-turn, or a tool call that does not fit the
 * declared tools (engine-sim adapts its calls to them). Its `/v1/models` lists `models` with no
 * `max_model_len`, and it has no metrics: an engine that reports no limits.
 */
export interface ScriptedVllm {
  url: string;
  /** The next answers, in order, in place of any still queued: sampled ids, or an error answer. */
  answer(...answers: ScriptedAnswer[]): void;
  /** The bodies of the generation requests received, in order. */
  readonly requests: { prompt: number[]; max_tokens: number }[];
  close(): Promise<void>;
}

/** A scripted answer: the ids to sample, or an error answer with vLLM's envelope. */
export type ScriptedAnswer = number[] | { status: number; message: string };

/** `models`: the ids its `/v1/models` lists. Default `Qwen/Qwen3-8B`. */
export async function startScriptedVllm(models: string[] = ['Qwen/Qwen3-8B']): Promise<ScriptedVllm> {
  const queue: ScriptedAnswer[] = [];
  const requests: ScriptedVllm['requests'] = [];
  const server: Server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/v1/models') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: models.map((id) => ({ id, object: 'model', owned_by: 'vllm' })) }));
      return;
    }
    // Health probes and the like: an engine that is up.
    if (req.method !== 'POST' || req.url !== '/v1/completions') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { prompt: number[]; max_tokens: number };
      requests.push(body);
      const ids = queue.shift();
      if (!ids) {
        res.writeHead(500).end('no scripted answer left');
        return;
      }
      if (!Array.isArray(ids)) {
        res.writeHead(ids.status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: ids.message, type: 'BadRequestError', param: null, code: ids.status } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (value: object) => res.write(`data: ${JSON.stringify(value)}\n\n`);
      ids.forEach((id, i) =>
        chunk({ choices: [{ index: 0, text: '', logprobs: { tokens: [`token_id:${id}`], token_logprobs: [-0.5] }, finish_reason: i === ids.length - 1 ? 'stop' : null }] }),
      );
      chunk({ choices: [], usage: { prompt_tokens: body.prompt.length, completion_tokens: ids.length } });
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    answer: (...answers) => queue.splice(0, queue.length, ...answers),
    requests,
    close: () => new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve()))),
  };
}

/** A test gateway over one scripted vLLM (instance `e0`), with helpers to script and call it. */
export interface ScriptedStack {
  engine: ScriptedVllm;
  store: Store;
  gateway: FastifyInstance;
  url: string;
  codec: Codec;
  /** The ids of a sampled turn: its text, then the end-of-turn token. */
  turn(text: string): Promise<number[]>;
  /** A JSON POST with the session key as every protocol takes it. */
  post(path: string, key: string, body: object): Promise<{ status: number; headers: Headers; json: any }>;
  close(): Promise<void>;
}

/** `engineLimits`: what the gateway knows of the engine besides its address (its `maxModelLen`). */
export async function startScriptedStack(prefix: string, codec?: Codec, engineLimits: Pick<EngineInstance, 'maxModelLen'> = {}): Promise<ScriptedStack> {
  const used = codec ?? (await testCodec());
  const engine = await startScriptedVllm();
  const store = tempStore(prefix);
  const { gateway, url } = await startTestGateway(store, [{ name: 'e0', kind: 'vllm', url: engine.url, ...engineLimits }], undefined, {}, used);
  return {
    engine,
    store,
    gateway,
    url,
    codec: used,
    turn: async (text) => [...(await used.tokenizer.encode(text)), used.encoder.endOfTurnId],
    post: async (path, key, body) => {
      const r = await fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'anthropic-version': '2023-06-01' },
        body: JSON.stringify(body),
      });
      return { status: r.status, headers: r.headers, json: await r.json() };
    },
    close: async () => {
      await gateway.close();
      await engine.close();
    },
  };
}
