import { Agent, request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestSession } from '../helpers/gateway.js';
import { startScriptedStack, type ScriptedStack } from '../helpers/scripted-vllm.js';

/** The connection header and socket of a streamed answer follow the client's request. */

let stack: ScriptedStack;

beforeAll(async () => {
  stack = await startScriptedStack('gw-sse-connection-');
});

afterAll(async () => {
  await stack?.close();
});

interface RawAnswer {
  status: number;
  connection: string | undefined;
  text: string;
  /** Settles when the server closes the socket. */
  closed: Promise<void>;
  reused: boolean;
}

/** One raw HTTP/1.1 chat request on `agent`'s sockets (a fresh socket with `false`). */
function rawPost(agent: Agent | false, headers: Record<string, string>, body: object): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const options = { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)), ...headers } };
    const req = httpRequest(`${stack.url}/v1/chat/completions`, options, (res) => {
      const socket = res.socket;
      const closed = new Promise<void>((done) => socket.once('close', () => done()));
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, text, closed, reused: req.reusedSocket }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const user = (content: string) => ({ role: 'user', content });

describe('gateway: connection handling of a streamed answer', () => {
  it('honours Connection: close and closes the socket after the stream', async () => {
    const key = await openTestSession(stack.url, 's-close');
    stack.engine.answer(await stack.turn('Closed.'));
    const r = await rawPost(false, { authorization: `Bearer ${key}`, connection: 'close' }, { messages: [user('x')], stream: true });
    expect(r.status).toBe(200);
    expect(r.connection).toBe('close');
    expect(r.text).toContain('data: [DONE]');
    await r.closed;
  });

  it('honours Connection: close on an Anthropic stream', async () => {
    const key = await openTestSession(stack.url, 's-close-anthropic');
    stack.engine.answer(await stack.turn('Closed.'));
    const payload = JSON.stringify({ model: 'm', max_tokens: 50, messages: [user('x')], stream: true });
    const r = await new Promise<{ connection: string | undefined; text: string }>((resolve, reject) => {
      const req = httpRequest(`${stack.url}/v1/messages`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'x-api-key': key, connection: 'close' } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ connection: res.headers.connection, text }));
      });
      req.on('error', reject);
      req.end(payload);
    });
    expect(r.connection).toBe('close');
    expect(r.text).toContain('message_stop');
  });

  it('serves a second request on a kept-alive socket after a stream', async () => {
    const key = await openTestSession(stack.url, 's-keep');
    stack.engine.answer(await stack.turn('One.'), await stack.turn('Two.'));
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await rawPost(agent, { authorization: `Bearer ${key}` }, { messages: [user('x')], stream: true });
      expect(first.connection).toBe('keep-alive');
      const second = await rawPost(agent, { authorization: `Bearer ${key}` }, { messages: [user('y')] });
      expect(second.reused).toBe(true);
      expect(second.status).toBe(200);
      expect(JSON.parse(second.text).choices[0].message.content).toBe('Two.');
    } finally {
      agent.destroy();
    }
  });
});
