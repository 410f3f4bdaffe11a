/**
 * The floor of a Node.js middlebox on bench:gateway's traffic, measured beside the gateway: fastify
 * with the gateway's body limit, a bearer token, the chat request parsed and serialised again, sent
 * with the gateway's own engine client (`postToEngine`) to the engine's `/v1/chat/completions`, and
 * the answer passed back (a stream as it arrives). No validation, template, tokens, router or store: what any Node proxy of
 * these conversations pays for HTTP and JSON on this machine.
 *
 *   node --import tsx bench/gateway/node-proxy.ts <engine url> <bearer token>
 *
 * Prints `http://127.0.0.1:<port>` on stdout once it listens.
 */
import Fastify from 'fastify';
import { engineEndpoint, postToEngine } from '../../gateway/backends/engine-http.js';
import { GATEWAY_MAX_BODY_BYTES } from '../../gateway/limits.js';

const [engineUrl, token] = process.argv.slice(2);
if (!engineUrl || !token) throw new Error('usage: node-proxy.ts <engine url> <bearer token>');

const chat = engineEndpoint(`${engineUrl}/v1/chat/completions`);
const app = Fastify({ bodyLimit: GATEWAY_MAX_BODY_BYTES });

app.post('/v1/chat/completions', async (request, reply) => {
  if (request.headers.authorization !== `Bearer ${token}`) return reply.code(401).send({ error: { message: 'bad token' } });
  const answer = await postToEngine(chat, JSON.stringify(request.body));
  // A stream goes back as it arrives; a whole answer is read first, as a proxy that looks at it would.
  if ((request.body as { stream?: unknown }).stream === true) return reply.code(answer.status).type(answer.header('content-type') ?? 'text/event-stream').send(answer.body);
  return reply.code(answer.status).type('application/json').send(await answer.text());
});

await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
if (address === null || typeof address === 'string') throw new Error('node-proxy: no TCP address');
process.stdout.write(`http://127.0.0.1:${address.port}\n`);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void app.close().then(() => process.exit(0)));
